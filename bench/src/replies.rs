//! What the loopback model answers in the benchmarks.

use odyssey_testing::openai_wire::{Reply, StreamBuilder, WireUsage};

/// A short answer in four deltas, as a quick model call returns.
pub fn short() -> Reply {
    Reply::text("The answer is ready.")
}

/// A long answer in exactly `deltas` text deltas of four characters each: a busy turn
/// of about that many events.
pub fn busy(deltas: usize) -> Reply {
    let deltas = deltas.max(1);
    StreamBuilder::new()
        .text(&"abc ".repeat(deltas), deltas)
        .finish("stop")
        .usage(WireUsage {
            prompt_tokens: 20,
            completion_tokens: deltas as u64,
            ..WireUsage::default()
        })
        .done()
        .build()
}
