//! Simulated steps per second for the full loop path: assembly, request
//! build, the mock provider's SSE stream over turmoil's network, chunk
//! translation and the session log, per step.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn loop_steps(c: &mut Criterion) {
    let rounds = 9;
    let loaded = dshc_benches::loop_scenario(rounds);
    let mut group = c.benchmark_group("loop");
    group.throughput(Throughput::Elements(rounds as u64 + 1));
    group.bench_function("steps/tool_round_trips", |b| {
        b.iter(|| {
            black_box(
                dshc_harness::reference::run_case(&loaded.case).expect("a compiled case is valid"),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, loop_steps);
criterion_main!(benches);
