//! Simulated steps per second for the full loop path: assembly, request
//! build, the mock provider's SSE stream over turmoil's network, chunk
//! translation and the session log, per step; and how a session's cost
//! grows with its length under `dshc sim`'s checks (two runs, every
//! invariant), which should follow the bytes its requests carry.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
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

fn session_length(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim/session_length");
    group.sample_size(10);
    for rounds in [10usize, 40, 160] {
        let loaded = dshc_benches::loop_scenario(rounds);
        group.throughput(Throughput::Elements(rounds as u64 + 1));
        group.bench_with_input(BenchmarkId::from_parameter(rounds), &loaded, |b, loaded| {
            b.iter(|| {
                let (violations, _) = dshc_harness::sim::check_session(&loaded.scenario);
                assert!(violations.is_empty(), "{violations:?}");
            })
        });
    }
    group.finish();
}

criterion_group!(benches, loop_steps, session_length);
criterion_main!(benches);
