//! One integration-test binary: every test drives the real `swarm` binary.

mod support;

mod bench;
mod demo;
mod faults;
mod faults_runtime;
mod launch;
mod lead;
mod store;
mod teammate;
