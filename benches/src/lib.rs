//! Benchmark support: corpus generation shared by the benches and the report binary.
