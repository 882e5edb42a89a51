//! What a run measured, as `REPORT.md` (for people) and `report.json` (for tools).

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::settings::Settings;
use crate::stats::Summary;

/// Which statistic of a figure a target bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    P50,
    P99,
    Max,
    /// A figure with one value, not a distribution (a ratio, a count).
    Value,
}

impl Statistic {
    fn label(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P99 => "p99",
            Self::Max => "max",
            Self::Value => "",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    AtMost,
    AtLeast,
}

/// A target and whether the measurement met it.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub statistic: Statistic,
    pub bound: Bound,
    pub limit: f64,
    pub measured: f64,
    pub met: bool,
}

/// One measured figure: a distribution of samples and/or one value, with its targets.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    pub name: String,
    /// What exactly was measured.
    pub definition: String,
    pub unit: String,
    pub summary: Option<Summary>,
    /// The figure's single value, when it has one (a rate over a run, a ratio).
    pub value: Option<f64>,
    pub checks: Vec<Check>,
}

impl Figure {
    pub fn new(name: &str, unit: &str, definition: impl Into<String>) -> Self {
        Self {
            name: name.to_owned(),
            definition: definition.into(),
            unit: unit.to_owned(),
            summary: None,
            value: None,
            checks: Vec::new(),
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

    /// Adds a target on `statistic`; a statistic that was not measured misses it.
    pub fn target(mut self, statistic: Statistic, bound: Bound, limit: f64) -> Self {
        let measured = match (statistic, &self.summary) {
            (Statistic::Value, _) => self.value,
            (Statistic::P50, Some(s)) => Some(s.p50),
            (Statistic::P99, Some(s)) => Some(s.p99),
            (Statistic::Max, Some(s)) => Some(s.max),
            (_, None) => None,
        };
        let met = measured.is_some_and(|m| match bound {
            Bound::AtMost => m <= limit,
            Bound::AtLeast => m >= limit,
        });
        self.checks.push(Check {
            statistic,
            bound,
            limit,
            measured: measured.unwrap_or(f64::NAN),
            met,
        });
        self
    }
}

/// One benchmark's figures, notes and the load around it.
#[derive(Clone, Debug, Serialize)]
pub struct BenchResult {
    pub name: String,
    pub title: String,
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

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub generated_at: String,
    /// The harness's arguments.
    pub command: String,
    pub machine: Machine,
    pub odysseyd: String,
    pub settings: Settings,
    pub benchmarks: Vec<BenchResult>,
}

impl Report {
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
        let _ = writeln!(md, "# Odyssey benchmark report\n");
        let _ = writeln!(
            md,
            "Measured {} by `cargo run --release -p odyssey-bench -- {}` against `{}`, a real \
             `odysseyd` child process on loopback, driven through the Rust client \
             (`odyssey-client`), with a loopback model server speaking the OpenAI \
             chat-completions wire format that answers at once. `report.json` holds the same \
             figures.\n",
            self.generated_at, self.command, self.odysseyd
        );
        let _ = writeln!(md, "## Machine\n");
        let _ = writeln!(md, "| | |\n|---|---|");
        let _ = writeln!(md, "| CPU | {} |", m.cpu);
        let _ = writeln!(md, "| cores | {} |", m.cores);
        let _ = writeln!(md, "| kernel | {} |", m.kernel);
        let _ = writeln!(md, "| memory | {} MiB |", m.memory_mib);
        let _ = writeln!(md, "| temporary homes on | {} |", m.tmp_filesystem);
        if let Some(sync) = &m.fdatasync_ms {
            let _ = writeln!(
                md,
                "| `fdatasync` there (append + sync, {} rounds) | p50 {} ms, p99 {} ms |",
                sync.n,
                number(sync.p50),
                number(sync.p99)
            );
        }
        if let Some(start) = &m.process_start_ms {
            let _ = writeln!(
                md,
                "| starting `/bin/true` ({} rounds) | p50 {} ms, p99 {} ms |",
                start.n,
                number(start.p50),
                number(start.p99)
            );
        }
        let _ = writeln!(md, "\n## Settings\n");
        let _ = writeln!(md, "```json\n{}\n```\n", self.settings.to_json());
        let _ = writeln!(md, "## Summary\n");
        let _ = writeln!(md, "| benchmark | figure | target | measured | result |");
        let _ = writeln!(md, "|---|---|---|---|---|");
        for bench in &self.benchmarks {
            if let Some(error) = &bench.error {
                let _ = writeln!(
                    md,
                    "| {} | — | — | failed: {} | **not run** |",
                    bench.name,
                    one_line(error)
                );
            }
            for figure in &bench.figures {
                for check in &figure.checks {
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {} | {} |",
                        bench.name,
                        figure.name,
                        target_text(check, &figure.unit),
                        measured_text(check, &figure.unit),
                        if check.met { "met" } else { "**missed**" }
                    );
                }
            }
        }
        for bench in &self.benchmarks {
            let _ = writeln!(md, "\n## {}: {}\n", bench.name, bench.title);
            let _ = writeln!(
                md,
                "Load average before {}, after {} (1, 5, 15 min); {:.1} s.\n",
                load(bench.load_before),
                load(bench.load_after),
                bench.seconds
            );
            if let Some(error) = &bench.error {
                let _ = writeln!(md, "**The benchmark failed:**\n\n```text\n{error}\n```\n");
            }
            if !bench.figures.is_empty() {
                let _ = writeln!(
                    md,
                    "| figure | unit | n | p50 | p95 | p99 | mean | max | value |"
                );
                let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
                for f in &bench.figures {
                    let cell = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), number);
                    let s = f.summary.as_ref();
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                        f.name,
                        f.unit,
                        s.map_or_else(|| "—".to_owned(), |s| s.n.to_string()),
                        cell(s.map(|s| s.p50)),
                        cell(s.map(|s| s.p95)),
                        cell(s.map(|s| s.p99)),
                        cell(s.map(|s| s.mean)),
                        cell(s.map(|s| s.max)),
                        cell(f.value),
                    );
                }
                let _ = writeln!(md);
                for f in &bench.figures {
                    let _ = writeln!(md, "- **{}**: {}", f.name, f.definition);
                }
            }
            if !bench.notes.is_empty() {
                let _ = writeln!(md);
                for note in &bench.notes {
                    let _ = writeln!(md, "{note}\n");
                }
            }
        }
        md
    }
}

fn target_text(check: &Check, unit: &str) -> String {
    let op = match check.bound {
        Bound::AtMost => "≤",
        Bound::AtLeast => "≥",
    };
    let label = check.statistic.label();
    let space = if label.is_empty() { "" } else { " " };
    format!("{label}{space}{op} {} {unit}", number(check.limit))
}

fn measured_text(check: &Check, unit: &str) -> String {
    if check.measured.is_nan() {
        return "not measured".to_owned();
    }
    format!("{} {unit}", number(check.measured))
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

    #[test]
    fn a_target_is_checked_against_its_statistic() {
        let summary = Summary::of(&[1.0, 2.0, 3.0, 10.0]);
        let figure = Figure::new("f", "ms", "d")
            .samples(summary)
            .target(Statistic::P50, Bound::AtMost, 2.0)
            .target(Statistic::P99, Bound::AtMost, 5.0)
            .target(Statistic::Value, Bound::AtLeast, 1.0);
        let met: Vec<bool> = figure.checks.iter().map(|c| c.met).collect();
        assert_eq!(met, [true, false, false], "no value: missed");
    }
}
