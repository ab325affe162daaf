//! `loom-agent`: see the library for what it does.

use clap::Parser;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = match loom_agent::cli::args_with_config(std::env::args_os().collect()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("loom-agent: {e}");
            std::process::exit(2);
        }
    };
    let cli = loom_agent::cli::Cli::parse_from(args);
    if let Err(e) = loom_agent::run::run(cli) {
        eprintln!("loom-agent: {e}");
        std::process::exit(1);
    }
}
