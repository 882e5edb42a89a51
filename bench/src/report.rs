//! What a run measured, as `REPORT.md` (for people) and `report.json` (for tools).
//!
//! A benchmark runs in rounds, interleaved with the others, each between two measurements
//! of the floors. A figure of a round is read against the mean of the floors measured just
//! before and just after it; across rounds, the report gives the median round and the
//! spread ((max − min) ÷ median), and flags a spread above [`UNSTEADY`]. A target is
//! judged on the median round, most of them on the ratio to a floor.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::binaries::Measured;
use crate::error::{BenchError, Result};
use crate::floors::{Floor, Floors};
use crate::machine::Machine;
use crate::settings::Settings;
use crate::stats::Summary;

/// Rounds of a figure differing by more than this (of the median) are flagged.
pub const UNSTEADY: f64 = 0.25;

/// Which statistic of a figure stands for it, or a target bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    P50,
    P99,
    Max,
    /// A figure with one value, not a distribution (a rate over a run, a ratio, a count).
    Value,
}

impl Statistic {
    fn label(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P99 => "p99",
            Self::Max => "max",
            Self::Value => "value",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    AtMost,
    AtLeast,
}

impl Bound {
    fn holds(self, measured: f64, limit: f64) -> bool {
        match self {
            Bound::AtMost => measured <= limit,
            Bound::AtLeast => measured >= limit,
        }
    }

    fn sign(self) -> &'static str {
        match self {
            Bound::AtMost => "≤",
            Bound::AtLeast => "≥",
        }
    }
}

/// A target on a figure's statistic, or (`ratio`) on that statistic ÷ the same
/// statistic of the figure's floor.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Target {
    pub statistic: Statistic,
    pub bound: Bound,
    pub limit: f64,
    pub ratio: bool,
}

/// One measured figure of one round: a distribution of samples and/or one value.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Figure {
    pub name: String,
    /// What exactly was measured.
    pub definition: String,
    pub unit: String,
    pub summary: Option<Summary>,
    /// The figure's single value, when it has one (a rate over a run, a ratio).
    pub value: Option<f64>,
    /// The floor it is read against.
    pub floor: Option<Floor>,
    pub targets: Vec<Target>,
}

impl Figure {
    pub fn new(name: &str, unit: &str, definition: impl Into<String>) -> Self {
        Self {
            name: name.to_owned(),
            definition: definition.into(),
            unit: unit.to_owned(),
            summary: None,
            value: None,
            floor: None,
            targets: Vec::new(),
        }
    }

    pub fn samples(mut self, summary: Option<Summary>) -> Self {
        self.summary = summary;
        self
    }

    pub fn value(mut self, value: f64) -> Self {
        self.value = Some(value);
        self
    }

    /// Reads the figure against `floor` (its ratio is shown beside it).
    pub fn against(mut self, floor: Floor) -> Self {
        self.floor = Some(floor);
        self
    }

    /// A target on the figure itself, in its unit.
    pub fn target(mut self, statistic: Statistic, bound: Bound, limit: f64) -> Self {
        self.targets.push(Target {
            statistic,
            bound,
            limit,
            ratio: false,
        });
        self
    }

    /// A target on the figure ÷ its floor (set with [`Figure::against`]).
    pub fn ratio_target(mut self, statistic: Statistic, bound: Bound, limit: f64) -> Self {
        self.targets.push(Target {
            statistic,
            bound,
            limit,
            ratio: true,
        });
        self
    }

    /// The statistic that stands for the figure: its first target's, else its value,
    /// else its p50.
    pub fn headline(&self) -> Statistic {
        match (self.targets.first(), self.value) {
            (Some(t), _) => t.statistic,
            (None, Some(_)) => Statistic::Value,
            (None, None) => Statistic::P50,
        }
    }

    pub fn stat(&self, statistic: Statistic) -> Option<f64> {
        match (statistic, &self.summary) {
            (Statistic::Value, Some(s)) => self.value.or(Some(s.p50)),
            (Statistic::Value, None) => self.value,
            (Statistic::P50, Some(s)) => Some(s.p50),
            (Statistic::P99, Some(s)) => Some(s.p99),
            (Statistic::Max, Some(s)) => Some(s.max),
            (_, None) => self.value,
        }
        .filter(|v| v.is_finite())
    }
}

/// One round of one benchmark.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Round {
    pub round: usize,
    pub floors_before: Floors,
    pub floors_after: Floors,
    pub figures: Vec<Figure>,
    /// What the figures mean, why a target is missed, what would fix it.
    pub notes: Vec<String>,
    /// Load averages (1, 5, 15 min) before and after.
    pub load_before: [f64; 3],
    pub load_after: [f64; 3],
    pub seconds: f64,
    /// Set when the benchmark could not run to the end.
    pub error: Option<String>,
}

impl Round {
    /// The floor around this round: the mean of the measurements before and after.
    pub fn floor(&self, floor: Floor, statistic: Statistic) -> Option<f64> {
        let values: Vec<f64> = [&self.floors_before, &self.floors_after]
            .iter()
            .filter_map(|f| f.get(floor, statistic))
            .collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// Rounds of one quantity: each round's value, the median round and the spread.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Across {
    pub rounds: Vec<Option<f64>>,
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// (max − min) ÷ median.
    pub spread: Option<f64>,
    /// The spread is above [`UNSTEADY`].
    pub unsteady: bool,
}

impl Across {
    pub fn of(rounds: Vec<Option<f64>>) -> Self {
        let mut values: Vec<f64> = rounds.iter().flatten().copied().collect();
        values.sort_by(f64::total_cmp);
        // The median round (the lower middle one for an even count: a round that ran).
        let median = (!values.is_empty()).then(|| values[(values.len() - 1) / 2]);
        let (min, max) = (values.first().copied(), values.last().copied());
        let spread = match (min, max, median) {
            (Some(min), Some(max), Some(median)) if values.len() > 1 && median != 0.0 => {
                Some((max - min) / median.abs())
            }
            _ => None,
        };
        Self {
            rounds,
            median,
            min,
            max,
            spread,
            unsteady: spread.is_some_and(|s| s > UNSTEADY),
        }
    }
}

/// A target judged on the median round.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Check {
    pub statistic: Statistic,
    pub bound: Bound,
    pub limit: f64,
    pub ratio: bool,
    /// The figure's statistic (or its ratio to the floor) in each round.
    pub measured: Across,
    pub met: bool,
}

/// A figure over all rounds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Aggregate {
    pub name: String,
    pub unit: String,
    pub definition: String,
    /// The statistic that stands for it.
    pub statistic: Statistic,
    pub value: Across,
    pub floor: Option<Floor>,
    /// The floor's same statistic around each round.
    pub floor_value: Option<Across>,
    /// value ÷ floor, each round.
    pub ratio: Option<Across>,
    pub checks: Vec<Check>,
}

/// One benchmark: its rounds, and its figures over them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchResult {
    pub name: String,
    pub title: String,
    pub figures: Vec<Aggregate>,
    pub rounds: Vec<Round>,
}

impl BenchResult {
    pub fn new(name: &str, title: &str, rounds: Vec<Round>) -> Self {
        Self {
            name: name.to_owned(),
            title: title.to_owned(),
            figures: aggregate(&rounds),
            rounds,
        }
    }

    pub fn failed_rounds(&self) -> usize {
        self.rounds.iter().filter(|r| r.error.is_some()).count()
    }
}

/// Figures by name, in their first appearance's order, over the rounds.
fn aggregate(rounds: &[Round]) -> Vec<Aggregate> {
    let mut order: Vec<&Figure> = Vec::new();
    for round in rounds {
        for figure in &round.figures {
            if !order.iter().any(|f| f.name == figure.name) {
                order.push(figure);
            }
        }
    }
    order
        .into_iter()
        .map(|first| {
            let name = first.name.as_str();
            let of_round = move |round: &Round| -> Option<Figure> {
                round.figures.iter().find(|f| f.name == name).cloned()
            };
            let statistic = first.headline();
            let values: Vec<Option<f64>> = rounds
                .iter()
                .map(|r| of_round(r).and_then(|f| f.stat(statistic)))
                .collect();
            let floor_at = |r: &Round, statistic| first.floor.and_then(|fl| r.floor(fl, statistic));
            let ratio_at = |r: &Round, statistic| {
                let value = of_round(r)?.stat(statistic)?;
                let floor = floor_at(r, statistic)?;
                (floor != 0.0).then(|| value / floor)
            };
            let checks = first
                .targets
                .iter()
                .map(|t| {
                    let measured = Across::of(
                        rounds
                            .iter()
                            .map(|r| {
                                if t.ratio {
                                    ratio_at(r, t.statistic)
                                } else {
                                    of_round(r).and_then(|f| f.stat(t.statistic))
                                }
                            })
                            .collect(),
                    );
                    let met = measured.median.is_some_and(|m| t.bound.holds(m, t.limit));
                    Check {
                        statistic: t.statistic,
                        bound: t.bound,
                        limit: t.limit,
                        ratio: t.ratio,
                        measured,
                        met,
                    }
                })
                .collect();
            Aggregate {
                name: first.name.clone(),
                unit: first.unit.clone(),
                definition: first.definition.clone(),
                statistic,
                value: Across::of(values),
                floor: first.floor,
                floor_value: first
                    .floor
                    .map(|_| Across::of(rounds.iter().map(|r| floor_at(r, statistic)).collect())),
                ratio: first
                    .floor
                    .map(|_| Across::of(rounds.iter().map(|r| ratio_at(r, statistic)).collect())),
                checks,
            }
        })
        .collect()
}

/// How this run's verdicts compare with another run's report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Comparison {
    /// The other report: when, under what load, how described.
    pub other: String,
    pub verdicts: usize,
    /// Verdicts that differ, as "benchmark / figure / target: here, there".
    pub differ: Vec<String>,
    /// Verdicts only one of the runs has.
    pub unmatched: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub generated_at: String,
    /// The harness's arguments.
    pub command: String,
    /// What else the machine was doing, as told by `--conditions`.
    pub conditions: Option<String>,
    /// Load averages (1, 5, 15 min) when the run started and ended.
    pub load_at_start: [f64; 3],
    pub load_at_end: [f64; 3],
    pub rounds: usize,
    pub machine: Machine,
    pub measured: Measured,
    pub settings: Settings,
    pub benchmarks: Vec<BenchResult>,
    pub comparison: Option<Comparison>,
}

/// Each verdict of a report, by benchmark, figure and target.
fn verdicts(benchmarks: &[BenchResult]) -> BTreeMap<String, bool> {
    let mut all = BTreeMap::new();
    for bench in benchmarks {
        for figure in &bench.figures {
            for check in &figure.checks {
                all.insert(
                    format!(
                        "{} / {} / {}",
                        bench.name,
                        figure.name,
                        target_text(check, &figure.unit, figure.floor)
                    ),
                    check.met,
                );
            }
        }
    }
    all
}

impl Report {
    /// Compares this run's verdicts with those of the report in `path`.
    pub fn compare_with(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path).map_err(|e| BenchError::io("read", path, e))?;
        let other: Report = serde_json::from_str(&text).map_err(|e| {
            BenchError::check(format!(
                "{} is not a report of this harness: {e}",
                path.display()
            ))
        })?;
        let (here, there) = (verdicts(&self.benchmarks), verdicts(&other.benchmarks));
        let word = |met: bool| if met { "met" } else { "missed" };
        let mut differ = Vec::new();
        let mut unmatched = Vec::new();
        for (key, met) in &here {
            match there.get(key) {
                Some(other_met) if other_met != met => {
                    differ.push(format!(
                        "{key}: {} here, {} there",
                        word(*met),
                        word(*other_met)
                    ));
                }
                Some(_) => {}
                None => unmatched.push(format!("{key}: only here")),
            }
        }
        for key in there.keys().filter(|k| !here.contains_key(*k)) {
            unmatched.push(format!("{key}: only there"));
        }
        self.comparison = Some(Comparison {
            other: format!(
                "{} ({}), load average {} at its start and {} at its end{}",
                other.generated_at,
                other.command,
                load(other.load_at_start),
                load(other.load_at_end),
                other
                    .conditions
                    .as_deref()
                    .map(|c| format!("; conditions: {c}"))
                    .unwrap_or_default()
            ),
            verdicts: here.len(),
            differ,
            unmatched,
        });
        Ok(())
    }

    /// Writes `REPORT.md` and `report.json` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io("create", dir, e))?;
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| BenchError::check(format!("cannot encode the report: {e}")))?;
        let json_path = dir.join("report.json");
        std::fs::write(&json_path, json + "\n")
            .map_err(|e| BenchError::io("write", &json_path, e))?;
        let md_path = dir.join("REPORT.md");
        std::fs::write(&md_path, self.markdown())
            .map_err(|e| BenchError::io("write", &md_path, e))?;
        Ok(())
    }

    pub fn markdown(&self) -> String {
        let mut md = String::new();
        let m = &self.machine;
        let b = &self.measured;
        let _ = writeln!(md, "# Odyssey benchmark report\n");
        let _ = writeln!(
            md,
            "Measured {} by `cargo run --release -p odyssey-bench -- {}`: a real `odysseyd` \
             child process on loopback, driven through the Rust client (`odyssey-client`), \
             with a loopback model server speaking the OpenAI chat-completions wire format \
             that answers at once. Each benchmark ran {} rounds, interleaved with the \
             others, each between two measurements of the floors. Load average {} when the \
             run started, {} when it ended (1, 5, 15 min){}. `report.json` holds the same \
             figures, every round and every floor.\n",
            self.generated_at,
            self.command,
            self.rounds,
            load(self.load_at_start),
            load(self.load_at_end),
            self.conditions
                .as_deref()
                .map(|c| format!("; meanwhile: {c}"))
                .unwrap_or_default()
        );
        let _ = writeln!(md, "## What was measured\n");
        let _ = writeln!(md, "| | |\n|---|---|");
        let _ = writeln!(md, "| version | {} |", b.version);
        let _ = writeln!(
            md,
            "| commit | {}{} |",
            b.commit.as_deref().unwrap_or("unknown"),
            if b.dirty {
                " with uncommitted changes"
            } else {
                ""
            }
        );
        for (what, binary) in [
            ("odysseyd", Some(&b.odysseyd)),
            ("odyssey-sandbox", b.sandbox_helper.as_ref()),
        ] {
            if let Some(binary) = binary {
                let _ = writeln!(
                    md,
                    "| {what} | `{}`, {} bytes, modified {} |",
                    binary.path.display(),
                    number(binary.bytes as f64),
                    binary.modified
                );
            }
        }
        let _ = writeln!(md, "| binaries | {} |", b.origin);
        let _ = writeln!(md, "\n## Machine\n");
        let _ = writeln!(md, "| | |\n|---|---|");
        let _ = writeln!(md, "| CPU | {} |", m.cpu);
        let _ = writeln!(md, "| cores | {} |", m.cores);
        let _ = writeln!(md, "| kernel | {} |", m.kernel);
        let _ = writeln!(md, "| memory | {} MiB |", m.memory_mib);
        let _ = writeln!(md, "| temporary homes on | {} |", m.tmp_filesystem);
        let _ = writeln!(md, "\n## Settings\n");
        let _ = writeln!(md, "```json\n{}\n```", self.settings.to_json());
        let _ = writeln!(md, "\n## How to read it\n");
        let _ = writeln!(
            md,
            "Absolute times on a shared machine move with the neighbours' load, so each \
             figure is shown beside its **floor**, what the machine gave at that moment for \
             the bare operation underneath (measured just before and just after each round \
             of each benchmark; a round is read against the mean of the two), and as a \
             multiple of it (**× floor**: the figure ÷ the floor's same statistic; for \
             rates, below 1). Most targets are on that ratio. A figure's **median round** is \
             reported, with the **spread** of its rounds, (max − min) ÷ median; a spread \
             above {:.0} % is flagged ⚠: that figure moved during the run, and its verdict \
             is weaker for it. The floors:\n",
            UNSTEADY * 100.0
        );
        for (floor, text) in FLOOR_TEXT {
            let _ = writeln!(md, "- **{}** ({}): {text}", floor.label(), floor.unit());
        }
        let _ = writeln!(md, "\n{TARGETS_CHOSEN}");
        let _ = writeln!(md, "\n## Summary\n");
        let _ = writeln!(
            md,
            "| benchmark | figure | target | median round | rounds | spread | result |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for bench in &self.benchmarks {
            if bench.figures.is_empty() {
                let error = bench
                    .rounds
                    .iter()
                    .find_map(|r| r.error.as_deref())
                    .unwrap_or("no figure");
                let _ = writeln!(
                    md,
                    "| {} | — | — | failed: {} | — | — | **not run** |",
                    bench.name,
                    one_line(error)
                );
            }
            for figure in &bench.figures {
                for check in &figure.checks {
                    let unit = if check.ratio {
                        "×".to_owned()
                    } else {
                        format!(" {}", figure.unit)
                    };
                    let rounds: Vec<String> = check
                        .measured
                        .rounds
                        .iter()
                        .map(|v| v.map_or_else(|| "—".to_owned(), number))
                        .collect();
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {} | {} | {} | {} |",
                        bench.name,
                        figure.name,
                        target_text(check, &figure.unit, figure.floor),
                        check.measured.median.map_or_else(
                            || "not measured".to_owned(),
                            |v| format!("{}{unit}", number(v))
                        ),
                        rounds.join(", "),
                        spread_text(&check.measured),
                        if check.met { "met" } else { "**missed**" }
                    );
                }
            }
        }
        if let Some(c) = &self.comparison {
            let _ = writeln!(md, "\n## Against another run\n");
            let _ = writeln!(md, "Compared with the run of {}.\n", c.other);
            if c.differ.is_empty() {
                let _ = writeln!(
                    md,
                    "Both runs agree on every one of the {} verdicts.",
                    c.verdicts
                );
            } else {
                let _ = writeln!(
                    md,
                    "{} of the {} verdicts differ:\n",
                    c.differ.len(),
                    c.verdicts
                );
                for d in &c.differ {
                    let _ = writeln!(md, "- {d}");
                }
            }
            if !c.unmatched.is_empty() {
                let _ = writeln!(md, "\nNot in both runs:\n");
                for u in &c.unmatched {
                    let _ = writeln!(md, "- {u}");
                }
            }
        }
        self.floors_markdown(&mut md);
        for bench in &self.benchmarks {
            bench_markdown(&mut md, bench);
        }
        md
    }

    /// The floors around each benchmark (medians of its rounds' before-and-after means),
    /// and their range over the run.
    fn floors_markdown(&self, md: &mut String) {
        let _ = writeln!(md, "\n## Floors\n");
        let _ = writeln!(
            md,
            "p50 of each floor (calls/s and events/s: the measured rate), the median of a \
             benchmark's rounds; the last row gives the lowest and highest single measurement \
             of the run.\n"
        );
        let header: Vec<String> = SHOWN_FLOORS
            .iter()
            .map(|f| format!("{} ({})", f.label(), f.unit()))
            .collect();
        let _ = writeln!(md, "| benchmark | {} |", header.join(" | "));
        let _ = writeln!(md, "|---|{}", "---|".repeat(SHOWN_FLOORS.len()));
        let mut all: Vec<Vec<f64>> = vec![Vec::new(); SHOWN_FLOORS.len()];
        for bench in &self.benchmarks {
            let cells: Vec<String> = SHOWN_FLOORS
                .iter()
                .enumerate()
                .map(|(i, floor)| {
                    for r in &bench.rounds {
                        for f in [&r.floors_before, &r.floors_after] {
                            if let Some(v) = f.get(*floor, Statistic::P50) {
                                all[i].push(v);
                            }
                        }
                    }
                    let across = Across::of(
                        bench
                            .rounds
                            .iter()
                            .map(|r| r.floor(*floor, Statistic::P50))
                            .collect(),
                    );
                    across.median.map_or_else(
                        || "—".to_owned(),
                        |v| format!("{}{}", number(v), if across.unsteady { " ⚠" } else { "" }),
                    )
                })
                .collect();
            let _ = writeln!(md, "| {} | {} |", bench.name, cells.join(" | "));
        }
        let ranges: Vec<String> = all
            .iter()
            .map(|values| {
                let min = values.iter().copied().fold(f64::INFINITY, f64::min);
                let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if values.is_empty() {
                    "—".to_owned()
                } else {
                    format!("{} – {}", number(min), number(max))
                }
            })
            .collect();
        let _ = writeln!(md, "| *whole run* | {} |", ranges.join(" | "));
        let errors: Vec<&String> = self
            .benchmarks
            .iter()
            .flat_map(|b| &b.rounds)
            .flat_map(|r| r.floors_before.errors.iter().chain(&r.floors_after.errors))
            .collect();
        if let Some(first) = errors.first() {
            let _ = writeln!(
                md,
                "\n{} floor measurements failed; the first: {}",
                errors.len(),
                one_line(first)
            );
        }
    }
}

/// How the limits of the targets were chosen (kept with the harness that applies them).
const TARGETS_CHOSEN: &str = "The limits of the ratios were chosen on this machine from a \
     run of `all` while other work kept it loaded (load average 5 to 15: turn overhead ÷ \
     (unary + fdatasync) 1.0 to 5.2 at the p50, tmpfs turn overhead 11 to 13× a bare \
     unary call, turns/s 0.042 to 0.052× bare calls/s, one subscriber 0.11 to 0.16× the \
     bare stream, replay 0.33 to 0.39×, a Bash call 1.2 to 2.1× bare bubblewrap, the proxy \
     2.8 to 3.5× a direct request) and from quieter runs of `quick`, each with a margin of \
     at least 1.4 over the worst round seen, so that the same code gets the same verdict \
     at another load. Where a ratio stands in for an older absolute target, the limit is \
     about that target ÷ the floor on a quiet machine (200,000 events/s to one \
     subscriber, 300,000 replayed events/s, 2,000 turns/s). The two runs that check it are \
     named under \"Against another run\".";

/// The floors in the floors table (the sum of unary and fdatasync is left out).
const SHOWN_FLOORS: [Floor; 6] = [
    Floor::Unary,
    Floor::UnaryConcurrent,
    Floor::Stream,
    Floor::Fdatasync,
    Floor::ProcessStart,
    Floor::Bwrap,
];

const FLOOR_TEXT: [(Floor, &str); 7] = [
    (
        Floor::Unary,
        "`ExecutionService.Run` of a bare tonic server of `odyssey.v1` in a child process \
         of the harness (the generated server trait, answering at once), one call at a time, \
         through `OdysseyClient::connect` as the benchmarks connect",
    ),
    (
        Floor::UnaryAndSync,
        "the bare unary call plus one `fdatasync`: the least a turn made durable can cost",
    ),
    (
        Floor::UnaryConcurrent,
        "the same call, 64 at once over 4 connections for 0.7 s (around the throughput \
         benchmark only)",
    ),
    (
        Floor::Stream,
        "`SessionService.SubscribeSession` of the bare server streaming 30,000 text-delta \
         events (the message type of the real stream), read by the client's `EventStream`: \
         events ÷ time from the first to the last",
    ),
    (
        Floor::Fdatasync,
        "a 256-byte append and `fdatasync` on the filesystem of the temporary homes",
    ),
    (
        Floor::ProcessStart,
        "starting `/bin/true` and waiting for it",
    ),
    (
        Floor::Bwrap,
        "bubblewrap running `/bin/true` with the options the sandbox uses for a \
         `workspace_write` cell (`BwrapPlan::args` of `odyssey-runtime`: namespaces, system \
         and cell binds, the helper bound), without the helper and bash",
    ),
];

fn bench_markdown(md: &mut String, bench: &BenchResult) {
    let _ = writeln!(md, "\n## {}: {}\n", bench.name, bench.title);
    for r in &bench.rounds {
        let _ = writeln!(
            md,
            "- round {}: load average {} before, {} after; {:.1} s{}",
            r.round,
            load(r.load_before),
            load(r.load_after),
            r.seconds,
            r.error
                .as_deref()
                .map(|e| format!("; **failed**: {}", one_line(e)))
                .unwrap_or_default()
        );
    }
    if let Some(error) = bench.rounds.iter().find_map(|r| r.error.as_deref()) {
        let _ = writeln!(md, "\n**A round failed:**\n\n```text\n{error}\n```");
    }
    if bench.figures.is_empty() {
        return;
    }
    let rounds = bench.rounds.len();
    let round_heads: Vec<String> = (1..=rounds).map(|r| format!("round {r}")).collect();
    let _ = writeln!(
        md,
        "\n| figure | unit | stat | {} | median | spread | floor | × floor |",
        round_heads.join(" | ")
    );
    let _ = writeln!(md, "|---|---|---|{}---|---|---|---|", "---|".repeat(rounds));
    for f in &bench.figures {
        let cells: Vec<String> = f
            .value
            .rounds
            .iter()
            .map(|v| v.map_or_else(|| "—".to_owned(), number))
            .collect();
        let floor = match (f.floor, &f.floor_value) {
            (Some(floor), Some(v)) => format!(
                "{} {} ({})",
                v.median.map_or_else(|| "—".to_owned(), number),
                floor.unit(),
                floor.label()
            ),
            _ => "—".to_owned(),
        };
        let ratio = f
            .ratio
            .as_ref()
            .and_then(|r| r.median)
            .map_or_else(|| "—".to_owned(), |v| format!("{}×", number(v)));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            f.name,
            f.unit,
            f.statistic.label(),
            cells.join(" | "),
            f.value.median.map_or_else(|| "—".to_owned(), number),
            spread_text(&f.value),
            floor,
            ratio
        );
    }
    let _ = writeln!(md);
    for f in &bench.figures {
        let _ = writeln!(md, "- **{}**: {}", f.name, f.definition);
    }
    // The notes of the last round that ran (their figures are that round's).
    if let Some(r) = bench
        .rounds
        .iter()
        .rev()
        .find(|r| r.error.is_none() && !r.notes.is_empty())
    {
        let _ = writeln!(md, "\nRound {}:\n", r.round);
        for note in &r.notes {
            let _ = writeln!(md, "{note}\n");
        }
    }
}

fn spread_text(across: &Across) -> String {
    match across.spread {
        Some(s) => format!(
            "{:.0} %{}",
            s * 100.0,
            if across.unsteady { " ⚠" } else { "" }
        ),
        None => "—".to_owned(),
    }
}

fn target_text(check: &Check, unit: &str, floor: Option<Floor>) -> String {
    let stat = check.statistic.label();
    let op = check.bound.sign();
    match (check.ratio, floor) {
        (true, Some(floor)) => format!(
            "{stat} {op} {}× {} {stat}",
            number(check.limit),
            floor.label()
        ),
        _ if check.statistic == Statistic::Value => format!("{op} {} {unit}", number(check.limit)),
        _ => format!("{stat} {op} {} {unit}", number(check.limit)),
    }
}

fn load(l: [f64; 3]) -> String {
    format!("{:.2} / {:.2} / {:.2}", l[0], l[1], l[2])
}

fn one_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().replace('|', "/")
}

/// Three significant digits, without exponent, with thousands grouped.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let abs = v.abs();
    let decimals = if abs >= 100.0 || abs == 0.0 {
        0
    } else if abs >= 10.0 {
        1
    } else if abs >= 1.0 {
        2
    } else {
        3
    };
    let text = format!("{v:.decimals$}");
    let (int, frac) = text
        .split_once('.')
        .map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(number(1234567.8), "1,234,568");
        assert_eq!(number(0.1234), "0.123");
        assert_eq!(number(12.345), "12.3");
        assert_eq!(number(-2500.0), "-2,500");
        assert_eq!(number(0.0), "0");
    }

    fn round(n: usize, figure: Figure, unary_before: f64, unary_after: f64) -> Round {
        let floors = |p50: f64| Floors {
            unary_ms: Summary::of(&[p50]),
            ..Floors::default()
        };
        Round {
            round: n,
            floors_before: floors(unary_before),
            floors_after: floors(unary_after),
            figures: vec![figure],
            notes: Vec::new(),
            load_before: [0.0; 3],
            load_after: [0.0; 3],
            seconds: 0.0,
            error: None,
        }
    }

    #[test]
    fn a_ratio_target_is_judged_on_the_median_round_against_its_floors() {
        let figure = |p50: f64| {
            Figure::new("f", "ms", "d")
                .samples(Summary::of(&[p50]))
                .against(Floor::Unary)
                .ratio_target(Statistic::P50, Bound::AtMost, 3.0)
        };
        // Ratios 2 (4 ÷ mean(1, 3)), 2.5 (5 ÷ 2) and 10 (10 ÷ 1).
        let rounds = vec![
            round(1, figure(4.0), 1.0, 3.0),
            round(2, figure(5.0), 2.0, 2.0),
            round(3, figure(10.0), 1.0, 1.0),
        ];
        let result = BenchResult::new("b", "t", rounds);
        let check = &result.figures[0].checks[0];
        assert_eq!(check.measured.median, Some(2.5));
        assert!(check.met, "the median round meets it");
        assert!(check.measured.unsteady, "rounds 2 to 10: flagged");
        assert_eq!(result.figures[0].value.median, Some(5.0));
    }

    #[test]
    fn an_absolute_target_without_a_measure_is_missed() {
        let figure = Figure::new("f", "MB", "d").target(Statistic::Max, Bound::AtMost, 1.0);
        let result = BenchResult::new("b", "t", vec![round(1, figure, 1.0, 1.0)]);
        assert!(!result.figures[0].checks[0].met);
        assert!(!result.figures[0].value.unsteady);
    }
}
