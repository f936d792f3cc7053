//! Agents that solve tasks by driving a persistent interpreter, turn after turn.
//!
//! [`pybench`]: PyBench's loop as upstream runs it (its system prompt, the `[INFO]` messages,
//! the first python block of each reply executed in a notebook-like session, a reply without
//! code ending the episode), its observations, replayed trajectories, and its checks.

pub mod pybench;
