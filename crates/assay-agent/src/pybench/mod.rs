//! PyBench (arXiv 2407.16732): an agent answers a real-world query over input files by
//! writing Python that runs in a persistent interpreter, for at most ten turns; a per-task
//! check judges the final answer or the files left in `./output/`.

pub mod checks;
pub mod episode;
pub mod judge;
pub mod markdown;
pub mod model;
pub mod observation;
pub mod protocol;
pub mod published;
pub mod replay;
pub mod summary;
pub mod transcript;

pub use episode::{run_episode, Episode, EpisodeSettings};
pub use protocol::Protocol;
pub use transcript::{Replier, Reply, ReplyError, Transcript};
