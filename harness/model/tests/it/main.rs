//! The model's integration tests, one binary (one link, not one per file).

mod js_vectors;
mod props;
mod resume;
