//! One integration-test binary: every test drives the real `swarm` binary.

mod support;

mod bench;
mod faults;
mod store;
