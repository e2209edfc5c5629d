fn main() {
    std::process::exit(swarm::run());
}
