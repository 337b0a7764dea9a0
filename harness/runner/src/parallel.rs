//! `--jobs N`: independent items (seeded sessions, cases) worked on by N
//! threads, their results handed back in item order.
//!
//! Parallelism must not change a byte of output: the consumer sees results
//! in exactly the order a serial run would produce them, so what is printed,
//! which failure is reported first, and every report are the same for any
//! job count. Each item runs wholly on one thread (a turmoil simulation and
//! its tokio runtimes are thread-local), so nothing inside an item is shared.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError, mpsc};

pub use crate::limits::MAX_JOBS;

/// How many threads to use when `--jobs` is not given: one per core the
/// process may use (nextest's default).
pub fn default_jobs() -> NonZeroUsize {
    let cores = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
    NonZeroUsize::new(cores.get().min(MAX_JOBS)).unwrap_or(NonZeroUsize::MIN)
}

/// Work `items` on `jobs` threads with `work`, and hand each result to
/// `consume` in item order. `consume` returning `Break` stops the run: no
/// new item starts, and results not yet consumed are dropped.
///
/// Items are drawn from `items` one at a time, as threads become free, so a
/// range of any length costs no memory up front.
///
/// With `jobs == 1` everything runs on the calling thread, in order.
pub fn for_each_ordered<I, T, R>(
    items: I,
    jobs: NonZeroUsize,
    work: impl Fn(T) -> R + Sync,
    consume: impl FnMut(R) -> ControlFlow<()>,
) where
    I: IntoIterator<Item = T>,
    I::IntoIter: Send,
    T: Send,
    R: Send,
{
    let mut threads = vec![(); jobs.get()];
    for_each_ordered_on(items, &mut threads, |(), item| work(item), consume);
}

/// [`for_each_ordered`] with one thread per member of `members` (adapter
/// processes, say): each item is worked on with the member its thread owns,
/// so no two items share a member at once. With no members nothing runs.
pub fn for_each_ordered_on<I, T, M, R>(
    items: I,
    members: &mut [M],
    work: impl Fn(&mut M, T) -> R + Sync,
    mut consume: impl FnMut(R) -> ControlFlow<()>,
) where
    I: IntoIterator<Item = T>,
    I::IntoIter: Send,
    T: Send,
    M: Send,
    R: Send,
{
    let items = items.into_iter();
    let threads = items
        .size_hint()
        .1
        .map_or(members.len(), |most| most.min(members.len()));
    if threads <= 1 {
        let Some(member) = members.first_mut() else {
            return;
        };
        for item in items {
            if consume(work(member, item)).is_break() {
                return;
            }
        }
        return;
    }
    // The calling thread works items too, with the first member, and hands
    // on results between its items: N jobs are N threads, with no thread
    // that only waits to be woken for each result.
    let Some((own, others)) = members[..threads].split_first_mut() else {
        return;
    };
    // Each item is drawn once, with its position, by the thread that is free.
    let source = Mutex::new(items.enumerate());
    let draw = || source.lock().unwrap_or_else(PoisonError::into_inner).next();
    let stopped = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<(usize, R)>();
    std::thread::scope(|scope| {
        for member in others.iter_mut() {
            let sender = sender.clone();
            let (draw, stopped, work) = (&draw, &stopped, &work);
            // A thread the system does not give leaves its items to the others.
            let _ = std::thread::Builder::new().spawn_scoped(scope, move || {
                while !stopped.load(Ordering::Relaxed) {
                    let Some((index, item)) = draw() else {
                        break;
                    };
                    if sender.send((index, work(member, item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        // Results arrive in completion order; they are handed on in item order.
        let mut waiting: BTreeMap<usize, R> = BTreeMap::new();
        let mut due = 0;
        let mut hand_on = |waiting: &mut BTreeMap<usize, R>| {
            while let Some(result) = waiting.remove(&due) {
                due += 1;
                if consume(result).is_break() {
                    stopped.store(true, Ordering::Relaxed);
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        };
        while let Some((index, item)) = draw() {
            waiting.insert(index, work(own, item));
            if hand_on(&mut waiting).is_break() {
                return;
            }
            // What the others finished meanwhile is handed on first, one
            // result at a time: while they finish faster than this thread
            // hands on, it only hands on, so results never pile up.
            while let Ok((index, result)) = receiver.try_recv() {
                waiting.insert(index, result);
                if hand_on(&mut waiting).is_break() {
                    return;
                }
            }
        }
        // Every item is drawn: wait for the ones still being worked.
        for (index, result) in receiver.iter() {
            waiting.insert(index, result);
            if hand_on(&mut waiting).is_break() {
                return;
            }
        }
    });
}

/// `--jobs N` read from the command line: 1 to [`MAX_JOBS`].
pub fn parse_jobs(text: &str) -> Result<NonZeroUsize, String> {
    let jobs: NonZeroUsize = text
        .parse()
        .map_err(|_| format!("`{text}` is not a positive whole number"))?;
    if jobs.get() > MAX_JOBS {
        return Err(format!("at most {MAX_JOBS} jobs, not {jobs}"));
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).unwrap()
    }

    #[test]
    fn jobs_beyond_the_cap_are_refused_not_spawned() {
        assert_eq!(parse_jobs("3"), Ok(jobs(3)));
        assert_eq!(parse_jobs("256"), Ok(jobs(MAX_JOBS)));
        let refused = parse_jobs("100000").expect_err("over the cap");
        assert_eq!(refused, "at most 256 jobs, not 100000");
        assert!(parse_jobs("0").is_err());
        assert!(parse_jobs("-1").is_err());
        assert!(default_jobs().get() <= MAX_JOBS);
    }

    #[test]
    fn results_come_in_item_order_whatever_the_job_count() {
        for n in [1, 2, 3, 8] {
            let mut seen = Vec::new();
            // Later items finish first: the order must still be the items'.
            for_each_ordered(
                0..40u64,
                jobs(n),
                |i| {
                    let mut spin = 0u64;
                    for k in 0..(40 - i) * 2000 {
                        spin = spin.wrapping_add(k);
                    }
                    std::hint::black_box(spin);
                    i * 10
                },
                |r| {
                    seen.push(r);
                    ControlFlow::Continue(())
                },
            );
            assert_eq!(
                seen,
                (0..40).map(|i| i * 10).collect::<Vec<_>>(),
                "jobs {n}"
            );
        }
    }

    #[test]
    fn a_break_stops_at_the_same_item_as_a_serial_run() {
        for n in [1, 2, 4] {
            let mut seen = Vec::new();
            for_each_ordered(
                0..100u32,
                jobs(n),
                |i| i,
                |r| {
                    seen.push(r);
                    if r == 17 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            );
            assert_eq!(seen, (0..=17).collect::<Vec<_>>(), "jobs {n}");
        }
    }

    #[test]
    fn an_endless_source_is_drawn_lazily() {
        for n in [1, 3] {
            let mut seen = Vec::new();
            // Collecting `0..` first would never end.
            for_each_ordered(
                0u64..,
                jobs(n),
                |i| i * 2,
                |r| {
                    seen.push(r);
                    if seen.len() == 50 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            );
            assert_eq!(seen, (0..50).map(|i| i * 2).collect::<Vec<_>>(), "jobs {n}");
        }
    }
}
