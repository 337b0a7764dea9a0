//! Assembly cost per step: assemble + render on a realistic registry, a
//! scaling series, and the copy bound (concatenate final texts, clone final
//! schemas) measured side by side in one run.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dshc_benches::{CopyBound, STANDARD, Shape, registry, step};
use std::hint::black_box;

fn per_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("step");
    let (registry_standard, scope) = registry(STANDARD);
    group.bench_function("assemble_render/standard", |b| {
        b.iter(|| black_box(step(&registry_standard, &scope)))
    });
    let bound = CopyBound::of(&registry_standard, &scope);
    group.bench_function("copy_bound/standard", |b| b.iter(|| black_box(bound.run())));
    group.finish();
}

fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling");
    for size in [10usize, 100, 1000] {
        let shape = Shape {
            sections: size,
            tools: size,
            ..STANDARD
        };
        let (registry, scope) = registry(shape);
        group.bench_with_input(BenchmarkId::new("assemble_render", size), &size, |b, _| {
            b.iter(|| black_box(step(&registry, &scope)))
        });
        let bound = CopyBound::of(&registry, &scope);
        group.bench_with_input(BenchmarkId::new("copy_bound", size), &size, |b, _| {
            b.iter(|| black_box(bound.run()))
        });
    }
    group.finish();
}

criterion_group!(benches, per_step, scaling);
criterion_main!(benches);
