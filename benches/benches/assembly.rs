//! Assembly cost per step on the shared fixtures (`benches/fixtures/`, the
//! same registries `dshc bench` sends every implementation): assemble +
//! render, the scaling series, and the copy bound, side by side in one run.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dshc_benches::{CopyBound, rig};
use std::hint::black_box;

fn per_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("step");
    for id in ["standard", "shadowing", "listeners"] {
        let rig = rig(id);
        group.bench_function(format!("assemble_render/{id}"), |b| {
            b.iter(|| black_box(rig.step().expect("a step")))
        });
    }
    let bound = CopyBound::of(rig("standard").assemble().expect("assembles"));
    group.bench_function("copy_bound/standard", |b| b.iter(|| black_box(bound.run())));
    group.finish();
}

fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling");
    for size in [10usize, 100, 1000] {
        let rig = rig(&format!("scaling-{size}"));
        group.bench_with_input(BenchmarkId::new("assemble_render", size), &size, |b, _| {
            b.iter(|| black_box(rig.step().expect("a step")))
        });
        let bound = CopyBound::of(rig.assemble().expect("assembles"));
        group.bench_with_input(BenchmarkId::new("copy_bound", size), &size, |b, _| {
            b.iter(|| black_box(bound.run()))
        });
    }
    group.finish();
}

criterion_group!(benches, per_step, scaling);
criterion_main!(benches);
