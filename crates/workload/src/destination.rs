//! Where a workload's telemetry goes, and how the command-line flags name it.

use std::path::PathBuf;

/// Where telemetry batches go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Counted and discarded (the probe-effect denominator).
    Noop,
    /// Wire frames over one TCP connection to this address (`host:port`).
    Tcp(String),
    /// Wire frames appended to a file, exactly as they would go over TCP.
    RawToFile(PathBuf),
    /// A recording file in the telemetry recording format.
    Recording(PathBuf),
}

/// `--alternative-recording`: a destination other than a recording file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Alternative {
    /// Count and discard.
    Noop,
    /// Frames over TCP to --addr.
    Tcp,
    /// Frames appended to --output-path.
    RawToFile,
}

impl Destination {
    /// The destination the workloads' flags describe: `--alternative-recording`
    /// wins; otherwise `--output-path` is a recording. The error says which
    /// flag is missing.
    pub fn from_flags(
        alternative: Option<Alternative>,
        addr: &str,
        output_path: Option<&PathBuf>,
    ) -> Result<Destination, String> {
        match (alternative, output_path) {
            (Some(Alternative::Noop), _) => Ok(Destination::Noop),
            (Some(Alternative::Tcp), _) => Ok(Destination::Tcp(addr.to_string())),
            (Some(Alternative::RawToFile), Some(p)) => Ok(Destination::RawToFile(p.clone())),
            (Some(Alternative::RawToFile), None) => {
                Err("raw-to-file needs --output-path".to_string())
            }
            (None, Some(p)) => Ok(Destination::Recording(p.clone())),
            (None, None) => Err(
                "give --output-path FILE or --alternative-recording noop|tcp|raw-to-file"
                    .to_string(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_choose_the_destination() {
        let p = PathBuf::from("/tmp/x");
        assert_eq!(
            Destination::from_flags(None, "a:1", Some(&p)),
            Ok(Destination::Recording(p.clone()))
        );
        assert_eq!(
            Destination::from_flags(Some(Alternative::Tcp), "a:1", None),
            Ok(Destination::Tcp("a:1".into()))
        );
        assert!(
            Destination::from_flags(Some(Alternative::RawToFile), "a:1", None)
                .unwrap_err()
                .contains("--output-path")
        );
        assert!(Destination::from_flags(None, "a:1", None)
            .unwrap_err()
            .contains("noop|tcp|raw-to-file"));
    }
}
