//! Bench support crate: criterion benches live in `benches/`.
