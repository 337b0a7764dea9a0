//! Every timer of a simulation in one registry, so that a simulation can skip
//! idle time instead of stepping through it.
//!
//! turmoil steps its hosts one millisecond at a time, so a run waiting on a
//! provider stall, a scripted sleep or a response delay of an hour costs 3.6
//! million steps of CPU though nothing happens in them. Every timer a
//! simulated host arms goes through [`sleep`], [`sleep_until`], [`Sleep`] or
//! [`timeout`] (`clippy.toml` disallows tokio's own), which record its
//! deadline while [`run`] drives the simulation; elsewhere they are plain
//! tokio timers. Knowing every deadline, [`run`] moves every host's clock to
//! one millisecond before the earliest one whenever no message is on the
//! network: the steps it leaves out would have done nothing, so the run is the
//! same, byte for byte, at a cost proportional to its events.
//!
//! Why it is exact: between two steps, a host's task is ready only if a
//! timer fired at the step's last instant (its deadline is then not in the
//! future, and nothing is skipped) or a message reached it (none is on the
//! network). A skip moves the hosts' tokio clocks together (turmoil's network
//! clock, which no host reads, stays behind, so later messages take their
//! latency as before), and the skipped time counts against the budget.
//! With a message latency under one tick nothing is skipped (a message can
//! then wait for delivery where the network's links do not show it). The one
//! timer not registered is hyper's head timer
//! (`ServerLimits::header_read_timeout_ms`), off in every simulation a case
//! runs.
//!
//! [`run_on_grid`] runs with a coarser tick g, for a case whose every
//! duration is a multiple of g: then every event (a timer firing, a message
//! delivered after its latency) falls on a multiple of g, the 1 ms steps in
//! between do nothing, and leaving them out changes nothing but the steps
//! taken. The registry checks the premise as the run goes: the first timer
//! armed off the grid (a duration the case does not state, such as a
//! computed backoff) stops the run as [`GridRun::OffGrid`], for the caller
//! to run again at 1 ms.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

/// One millisecond: turmoil's tick in every dshc simulation but a grid
/// run's ([`run_on_grid`]).
pub const TICK: Duration = Duration::from_millis(1);

thread_local! {
    /// The registry of the simulation [`run`] drives on this thread.
    static ACTIVE: RefCell<Option<Rc<Registry>>> = const { RefCell::new(None) };
}

/// The armed timers of one simulation, its hosts' runtimes and the time
/// skipped so far.
struct Registry {
    /// Tells this registry's timers from an earlier one's.
    serial: u64,
    /// Armed timers: (deadline in simulated time, skips included; id).
    deadlines: RefCell<BTreeSet<(Duration, u64)>>,
    next_id: Cell<u64>,
    skipped: Cell<Duration>,
    hosts: RefCell<Vec<tokio::runtime::Handle>>,
    /// The simulation's tick: every deadline must be a multiple of it.
    tick: Duration,
    /// The first deadline armed off the grid of `tick`, if any.
    off_grid: Cell<Option<Duration>>,
}

thread_local! {
    static SERIALS: Cell<u64> = const { Cell::new(0) };
}

fn active() -> Option<Rc<Registry>> {
    ACTIVE.with(|active| active.borrow().clone())
}

/// Simulated time now on the running host, skips included; `None` outside
/// a host of a simulation [`run`] drives.
fn now_in(registry: &Registry) -> Option<Duration> {
    sim_elapsed().map(|elapsed| elapsed + registry.skipped.get())
}

#[cfg(feature = "turmoil")]
fn sim_elapsed() -> Option<Duration> {
    turmoil::sim_elapsed()
}

#[cfg(not(feature = "turmoil"))]
fn sim_elapsed() -> Option<Duration> {
    None
}

/// How long the running host has been simulated, skipped time included:
/// `turmoil::elapsed()` leaves skips out. Zero outside a simulation.
pub fn elapsed() -> Duration {
    let skipped = active().map_or(Duration::ZERO, |registry| registry.skipped.get());
    sim_elapsed().unwrap_or_default() + skipped
}

/// Called first by a host's (or client's) software in a simulation [`run`]
/// drives: its clock moves with every skip. A host that does not enlist
/// keeps [`run`] from skipping at all.
pub fn enlist() {
    if let Some(registry) = active()
        && let Ok(handle) = tokio::runtime::Handle::try_current()
    {
        registry.hosts.borrow_mut().push(handle);
    }
}

/// A timer's entry in the registry, removed when it is dropped.
struct Armed {
    serial: u64,
    key: (Duration, u64),
}

impl Armed {
    fn new(after: Duration) -> Option<Armed> {
        let registry = active()?;
        let deadline = now_in(&registry)?.saturating_add(after);
        if registry.tick > TICK
            && registry.off_grid.get().is_none()
            && deadline.as_nanos() % registry.tick.as_nanos() != 0
        {
            registry.off_grid.set(Some(deadline));
        }
        let id = registry.next_id.get();
        registry.next_id.set(id + 1);
        registry.deadlines.borrow_mut().insert((deadline, id));
        Some(Armed {
            serial: registry.serial,
            key: (deadline, id),
        })
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        if let Some(registry) = active()
            && registry.serial == self.serial
        {
            registry.deadlines.borrow_mut().remove(&self.key);
        }
    }
}

/// `tokio::time::Sleep`, registered while armed.
pub struct Sleep {
    inner: Pin<Box<tokio::time::Sleep>>,
    armed: Option<Armed>,
}

impl Sleep {
    /// A sleep of `duration` from now.
    pub fn new(duration: Duration) -> Sleep {
        Sleep {
            armed: Armed::new(duration),
            #[expect(clippy::disallowed_methods, reason = "the one place a sleep is armed")]
            inner: Box::pin(tokio::time::sleep(duration)),
        }
    }

    /// A sleep until `deadline` (tokio time).
    pub fn until(deadline: tokio::time::Instant) -> Sleep {
        let duration = deadline.saturating_duration_since(tokio::time::Instant::now());
        Sleep {
            armed: Armed::new(duration),
            #[expect(clippy::disallowed_methods, reason = "the one place a sleep is armed")]
            inner: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        let polled = self.inner.as_mut().poll(context);
        if polled.is_ready() {
            self.armed = None;
        }
        polled
    }
}

/// `tokio::time::sleep`, registered.
pub fn sleep(duration: Duration) -> Sleep {
    Sleep::new(duration)
}

/// `tokio::time::sleep_until`, registered.
pub fn sleep_until(deadline: tokio::time::Instant) -> Sleep {
    Sleep::until(deadline)
}

/// `tokio::time::timeout`, its timer registered while `future` runs.
pub async fn timeout<F: Future>(
    duration: Duration,
    future: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    let _armed = Armed::new(duration);
    #[expect(
        clippy::disallowed_methods,
        reason = "the one place a timeout is armed"
    )]
    tokio::time::timeout(duration, future).await
}

#[cfg(feature = "turmoil")]
/// Run `sim` until its clients finish, as `Sim::run` does, skipping idle
/// time (see the module docs). `hosts` is how many hosts and clients it has
/// (each calls [`enlist`]); `budget` is its simulation duration, which
/// skipped time counts against: a run still busy after it ends with
/// turmoil's own error, naming the steps a step-by-step run would have
/// taken. `latency` is its message latency: under one tick, a message sent
/// late in a step can wait for delivery where [`turmoil::Sim::links`] does
/// not show it, so nothing is skipped. `sim` ticks 1 ms ([`TICK`]).
pub fn run(
    sim: &mut turmoil::Sim<'_>,
    budget: Duration,
    latency: Duration,
    hosts: usize,
) -> turmoil::Result {
    match run_on_grid(sim, budget, latency, TICK, hosts) {
        GridRun::Exact(result) => result,
        GridRun::OffGrid { .. } => unreachable!("every deadline is on the 1 ms grid"),
    }
}

/// How a run on a tick's grid ended.
#[cfg(feature = "turmoil")]
#[derive(Debug)]
pub enum GridRun {
    /// Every timer fell on the grid: the 1 ms run's end, byte for byte.
    Exact(turmoil::Result),
    /// A timer was armed for `deadline`, off the grid: the run stopped
    /// there, and only a 1 ms run can say what follows.
    OffGrid {
        /// The first deadline off the grid (simulated time, skips included).
        deadline: Duration,
    },
}

#[cfg(feature = "turmoil")]
/// [`run`], for a `sim` built with a tick of `tick` (a whole number of
/// milliseconds, dividing `budget` and `latency`): the same run as at 1 ms
/// while every timer falls on the grid (see the module docs).
pub fn run_on_grid(
    sim: &mut turmoil::Sim<'_>,
    budget: Duration,
    latency: Duration,
    tick: Duration,
    hosts: usize,
) -> GridRun {
    /// Puts the registry that was active back, even on a panic.
    struct Restore(Option<Rc<Registry>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            ACTIVE.with(|active| *active.borrow_mut() = previous);
        }
    }
    let registry = Rc::new(Registry {
        serial: SERIALS.with(|serials| {
            serials.set(serials.get() + 1);
            serials.get()
        }),
        deadlines: RefCell::default(),
        next_id: Cell::new(0),
        skipped: Cell::new(Duration::ZERO),
        hosts: RefCell::default(),
        tick,
        off_grid: Cell::new(None),
    });
    let _restore = Restore(ACTIVE.with(|active| active.replace(Some(registry.clone()))));
    // No skipping at all: every host must enlist, which none then does.
    let hosts = if latency < tick { usize::MAX } else { hosts };
    run_with(sim, budget, hosts, &registry)
}

#[cfg(feature = "turmoil")]
fn run_with(
    sim: &mut turmoil::Sim<'_>,
    budget: Duration,
    hosts: usize,
    registry: &Registry,
) -> GridRun {
    let tick = registry.tick;
    loop {
        let finished = match sim.step() {
            Ok(finished) => finished,
            Err(error) => return GridRun::Exact(Err(error)),
        };
        if let Some(deadline) = registry.off_grid.get() {
            return GridRun::OffGrid { deadline };
        }
        if finished {
            return GridRun::Exact(Ok(()));
        }
        let now = sim.elapsed() + registry.skipped.get();
        // A 1 ms run still steps to budget + 1 ms, where events can end
        // it; on a coarser grid nothing happens there, so the run ends at
        // the budget. Either way the 1 ms run's error, which counts its
        // steps from 1 and bumps the count after each: budget + 2.
        if now > budget || (now == budget && tick > TICK) {
            return GridRun::Exact(Err(format!(
                "Ran for duration: {budget:?} steps: {} without completing",
                budget.as_millis() + 2
            )
            .into()));
        }
        if registry.hosts.borrow().len() != hosts || on_the_network(sim) {
            continue;
        }
        // Up to one tick before the earliest deadline (nothing armed: the
        // run waits for nothing, so up to the budget's end).
        let earliest = registry.deadlines.borrow().first().map(|(at, _)| *at);
        let target = earliest.map_or(budget, |at| at.saturating_sub(tick).min(budget));
        // Whole ticks, so that the clocks stay on the grid.
        let ticks = target.saturating_sub(now).as_nanos() / tick.as_nanos();
        let skip = Duration::from_nanos(u64::try_from(ticks * tick.as_nanos()).unwrap_or(0));
        if skip.is_zero() {
            continue;
        }
        for handle in registry.hosts.borrow().iter() {
            advance(handle, skip);
        }
        registry.skipped.set(registry.skipped.get() + skip);
    }
}

/// Whether a message is on the simulated network, not yet delivered.
#[cfg(feature = "turmoil")]
fn on_the_network(sim: &mut turmoil::Sim<'_>) -> bool {
    let mut any = false;
    sim.links(|links| {
        for mut link in links {
            any |= link.next().is_some();
        }
    });
    any
}

/// Move the paused clock of the runtime behind `handle` forward by `by`.
#[cfg(feature = "turmoil")]
fn advance(handle: &tokio::runtime::Handle, by: Duration) {
    let _entered = handle.enter();
    let mut advancing = std::pin::pin!(tokio::time::advance(by));
    let mut context = Context::from_waker(std::task::Waker::noop());
    // `advance` moves the clock at its first poll, then yields once (outside
    // a scheduler, a yield wakes at once).
    let advanced = (0..4).any(|_| advancing.as_mut().poll(&mut context).is_ready());
    assert!(advanced, "tokio::time::advance did not finish");
}
