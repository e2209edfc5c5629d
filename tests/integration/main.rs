//! One integration-test binary: every test drives the real `swarm` binary in a temp root and
//! reads what it prints (`--json`) or the files PROTOCOL.md documents, never the library.

mod support;

mod autonomous;
mod bench;
mod demo;
mod escaping;
mod faults;
mod hooks;
mod impersonation;
mod launch;
mod lead;
mod lifecycle_safety;
mod store;
mod teammate;
