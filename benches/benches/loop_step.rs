//! Simulated steps per second for the full loop path: assembly, request
//! build, the mock provider's SSE stream over turmoil's network, chunk
//! translation and the session log, per step; and how a session's cost
//! grows with its length under `dshc sim`'s checks (two runs, every
//! invariant), which should follow the bytes its requests carry; and the
//! floor under both: what the simulated network costs per simulated
//! millisecond when nothing happens on it, since turmoil ticks every host
//! every millisecond whether or not it has work.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn loop_steps(c: &mut Criterion) {
    let rounds = 9;
    let loaded = dshc_benches::loop_scenario(rounds);
    let mut group = c.benchmark_group("loop");
    group.throughput(Throughput::Elements(rounds as u64 + 1));
    group.bench_function("steps/tool_round_trips", |b| {
        b.iter(|| {
            black_box(dshc_reference::run_case(&loaded.case).expect("a compiled case is valid"))
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
                let (violations, _) = dshc_fuzzing::sim::check_session(&loaded.scenario);
                assert!(violations.is_empty(), "{violations:?}");
            })
        });
    }
    group.finish();
}

/// One idle simulated millisecond on the network every loop case runs on
/// (`provider_simulation`: the topology, the provider's host, one client),
/// the client only sleeping: turmoil's fixed cost per tick, which a
/// session pays for every simulated millisecond it spans.
fn idle_network(c: &mut Criterion) {
    let idle_ms = 1_000u64;
    let provider = mock_provider::MockProvider::new(mock_provider::Script::default())
        .expect("an empty script is valid");
    let simulation = dshc_scenario::protocol::SimulationSpec::default();
    let mut group = c.benchmark_group("network");
    group.throughput(Throughput::Elements(idle_ms));
    group.bench_function("idle_simulated_ms", |b| {
        b.iter(|| {
            let mut sim = dshc_reference::provider_simulation(&provider, &simulation);
            sim.client("idle", async move {
                // Stepped through, millisecond by millisecond: the cost of
                // one busy simulated millisecond (`sim_time::run` would skip
                // an idle one).
                #[expect(
                    clippy::disallowed_methods,
                    reason = "a plain turmoil run, measuring its step"
                )]
                tokio::time::sleep(std::time::Duration::from_millis(idle_ms)).await;
                Ok(())
            });
            sim.run()
                .expect("an idle client finishes within the budget");
            black_box(sim.elapsed())
        })
    });
    group.finish();
}

criterion_group!(benches, loop_steps, session_length, idle_network);
criterion_main!(benches);
