//! Load (bounded): 100 concurrent streaming requests through the proxy on loopback.
fn main() {}
