//! One module per subcommand (or family of subcommands).

pub mod bench;
pub mod dataset;
pub mod demo;
pub mod probe;
pub mod report;
pub mod runs;
pub mod score;
pub mod sim;
pub mod watch;
