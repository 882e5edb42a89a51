//! The benchmarks, one per figure of the targets.

mod a2a;
mod append;
mod archives;
mod delivery;
mod egress;
mod mcp;
mod overhead;
mod replay;
mod sandbox;
mod scale;
mod startup;
mod subagents;
mod throughput;
mod turn_cost;
mod workspace;

use crate::env::Env;
use crate::error::Result;
use crate::report::Figure;

/// What one benchmark measured.
#[derive(Default)]
pub struct Outcome {
    pub figures: Vec<Figure>,
    /// Definitions beyond a line, and explanations of missed targets.
    pub notes: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    All,
    /// The per-issue benchmarks (archives, egress, sandbox, overhead) at small sizes.
    Quick,
    Overhead,
    Throughput,
    Append,
    Startup,
    Delivery,
    Sandbox,
    Replay,
    Archives,
    Egress,
    TurnCost,
    Mcp,
    Subagents,
    Workspace,
    A2a,
    Scale,
}

impl Which {
    /// Every benchmark, in the order of the report.
    pub const EACH: [Which; 15] = [
        Which::Overhead,
        Which::Throughput,
        Which::Append,
        Which::Startup,
        Which::Delivery,
        Which::Sandbox,
        Which::Replay,
        Which::Archives,
        Which::Egress,
        Which::TurnCost,
        Which::Mcp,
        Which::Subagents,
        Which::Workspace,
        Which::A2a,
        Which::Scale,
    ];

    /// The benchmarks of `quick`.
    pub const QUICK: [Which; 4] = [
        Which::Archives,
        Which::Egress,
        Which::Sandbox,
        Which::Overhead,
    ];

    /// The benchmarks this one stands for.
    pub fn each(self) -> Vec<Which> {
        match self {
            Which::All => Self::EACH.to_vec(),
            Which::Quick => Self::QUICK.to_vec(),
            one => vec![one],
        }
    }

    /// Whether its figures are read against the concurrent unary floor.
    pub fn needs_concurrent_floor(self) -> bool {
        self == Which::Throughput
    }

    pub fn name(self) -> &'static str {
        match self {
            Which::All => "all",
            Which::Quick => "quick",
            Which::Overhead => "overhead",
            Which::Throughput => "throughput",
            Which::Append => "append",
            Which::Startup => "startup",
            Which::Delivery => "delivery",
            Which::Sandbox => "sandbox",
            Which::Replay => "replay",
            Which::Archives => "archives",
            Which::Egress => "egress",
            Which::TurnCost => "turn-cost",
            Which::Mcp => "mcp",
            Which::Subagents => "subagents",
            Which::Workspace => "workspace",
            Which::A2a => "a2a",
            Which::Scale => "scale",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Which::All => "every benchmark",
            Which::Quick => "the per-issue benchmarks at small sizes",
            Which::Overhead => "runtime overhead of a turn through Run",
            Which::Throughput => "turns per second across concurrent sessions",
            Which::Append => "cost of a late turn against an early one",
            Which::Startup => "server start with many sessions on disk, and memory",
            Which::Delivery => "live event delivery to subscribers",
            Which::Sandbox => "Bash tool calls under workspace_write",
            Which::Replay => "SubscribeSession replay of a long session",
            Which::Archives => "hostile bundle archives refused",
            Which::Egress => "networked sandboxes through the egress proxy",
            Which::TurnCost => "a turn's own cost against model servers as users run them",
            Which::Mcp => "stdio MCP servers: a warm tool call, and a start in the sandbox",
            Which::Subagents => "what a sub-agent call adds beyond the child's turn",
            Which::Workspace => "fork and turn-end snapshot of a session with a large workspace",
            Which::A2a => "what A2A SendMessage adds to a turn beyond Run",
            Which::Scale => {
                "scale-out on PostgreSQL beside the file store: overhead, turns/s with 1 and 3 replicas and their database cost, cross-replica delivery, failover"
            }
        }
    }

    pub async fn run(self, env: &Env) -> Result<Outcome> {
        match self {
            Which::All | Which::Quick => Ok(Outcome::default()),
            Which::Overhead => overhead::run(env).await,
            Which::Throughput => throughput::run(env).await,
            Which::Append => append::run(env).await,
            Which::Startup => startup::run(env).await,
            Which::Delivery => delivery::run(env).await,
            Which::Sandbox => sandbox::run(env).await,
            Which::Replay => replay::run(env).await,
            Which::Archives => archives::run(env).await,
            Which::Egress => egress::run(env).await,
            Which::TurnCost => turn_cost::run(env).await,
            Which::Mcp => mcp::run(env).await,
            Which::Subagents => subagents::run(env).await,
            Which::Workspace => workspace::run(env).await,
            Which::A2a => a2a::run(env).await,
            Which::Scale => scale::run(env).await,
        }
    }
}
