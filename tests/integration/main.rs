//! One integration-test binary: every test drives the real `swarm` binary in a temp root and
//! reads what it prints (`--json`) or the files PROTOCOL.md documents, never the library.

mod support;

mod authority;
mod autonomous;
mod claude_teams;
mod completions;
mod contain;
mod demo;
mod escaping;
mod faults;
mod first_use;
mod frames;
mod hooks;
mod hostile_claude_config;
mod hostile_teammate;
mod impersonation;
mod interop;
mod launch;
mod lead;
mod lifecycle;
mod lifecycle_safety;
mod memory;
mod remote;
mod requests;
mod scarce;
mod store;
mod teammate;
mod timeline;
mod top;
