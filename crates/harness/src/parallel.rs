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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// How many threads to use when `--jobs` is not given: one per core the
/// process may use (nextest's default).
pub fn default_jobs() -> NonZeroUsize {
    std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)
}

/// Work `items` on `jobs` threads with `work`, and hand each result to
/// `consume` in item order. `consume` returning `Break` stops the run: no
/// new item starts, and results not yet consumed are dropped.
///
/// With `jobs == 1` everything runs on the calling thread, in order.
pub fn for_each_ordered<T, R>(
    items: Vec<T>,
    jobs: NonZeroUsize,
    work: impl Fn(T) -> R + Sync,
    mut consume: impl FnMut(R) -> ControlFlow<()>,
) where
    T: Send,
    R: Send,
{
    if jobs.get() == 1 || items.len() <= 1 {
        for item in items {
            if consume(work(item)).is_break() {
                return;
            }
        }
        return;
    }
    let count = items.len();
    // Each item is taken exactly once, by the thread that claims its index.
    let slots: Vec<std::sync::Mutex<Option<T>>> = items
        .into_iter()
        .map(|item| std::sync::Mutex::new(Some(item)))
        .collect();
    let next = AtomicUsize::new(0);
    let stopped = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<(usize, R)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs.get().min(count) {
            let sender = sender.clone();
            let (slots, next, stopped, work) = (&slots, &next, &stopped, &work);
            scope.spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(slot) = slots.get(index) else {
                        break;
                    };
                    let item = slot
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .take();
                    let Some(item) = item else { continue };
                    if sender.send((index, work(item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        // Results arrive in completion order; hand them on in item order.
        let mut waiting: BTreeMap<usize, R> = BTreeMap::new();
        let mut due = 0;
        for (index, result) in receiver.iter() {
            waiting.insert(index, result);
            while let Some(result) = waiting.remove(&due) {
                due += 1;
                if consume(result).is_break() {
                    stopped.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).unwrap()
    }

    #[test]
    fn results_come_in_item_order_whatever_the_job_count() {
        for n in [1, 2, 3, 8] {
            let mut seen = Vec::new();
            // Later items finish first: the order must still be the items'.
            for_each_ordered(
                (0..40u64).collect(),
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
                (0..100u32).collect(),
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
}
