//! The `swarm` binary: everything lives in the library; `run` returns the exit code.

fn main() {
    std::process::exit(swarm::run());
}
