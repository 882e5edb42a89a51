//! Hostile bundle archives: how fast the server refuses them, and what they cost its disk.
//! An upload that breaks a limit must be refused before anything of it is written, so even
//! the worst of them is turned away in well under a second and leaves the disk alone:
//! 200,000 empty files (2 MB compressed, 20 times the entry limit), a gzip bomb (a quarter
//! of a gigabyte of zeros in a few hundred KB, within the size limit) and a path 10,000
//! directories deep, each through ImportBundle and BuildBundle.

use std::io::Read;
use std::time::Instant;

use flate2::Compression;
use flate2::write::GzEncoder;
use odyssey_client::OdysseyClient;

use super::Outcome;
use crate::env::Env;
use crate::error::{BenchError, Result};
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;

/// Empty files in the first archive.
const EMPTY_FILES: usize = 200_000;
/// Zeros in the bomb's one file: within the server's default 256 MiB content limit.
const BOMB_BYTES: u64 = 250 * 1024 * 1024;
/// Directories above the deep path's file.
const DEPTH: usize = 10_000;
/// The refusal time each archive must stay within.
const TARGET_SECONDS: f64 = 1.0;

/// One hostile archive.
struct Hostile {
    name: &'static str,
    what: String,
    bytes: Vec<u8>,
}

#[derive(Clone, Copy)]
enum Rpc {
    Import,
    Build,
}

impl Rpc {
    fn name(self) -> &'static str {
        match self {
            Rpc::Import => "ImportBundle",
            Rpc::Build => "BuildBundle",
        }
    }

    async fn send(self, client: &OdysseyClient, archive: Vec<u8>) -> Result<tonic::Status> {
        let answer = match self {
            Rpc::Import => client.import_bundle(archive, "", false).await,
            Rpc::Build => client.build_bundle(archive, "", false).await,
        };
        match answer {
            Ok(bundle) => Err(BenchError::check(format!(
                "{} installed a hostile archive as {}",
                self.name(),
                bundle.r#ref.map(|r| r.name).unwrap_or_default()
            ))),
            Err(e) => e.status().cloned().ok_or_else(|| {
                BenchError::check(format!("{} failed without an answer: {e}", self.name()))
            }),
        }
    }
}

pub async fn run(env: &Env) -> Result<Outcome> {
    let runs = env.settings.archive_runs.max(1);
    let archives = [empty_files()?, bomb()?, deep_path()?];
    let home = env.home("archives")?;
    let daemon = env.daemon(&home, None, &[]).await?;
    let client = daemon.client().await?;
    let mut outcome = Outcome::default();
    let written_before = daemon.disk_written()?;
    for archive in &archives {
        for rpc in [Rpc::Import, Rpc::Build] {
            let mut seconds = Vec::with_capacity(runs);
            let mut answer = None;
            for _ in 0..runs {
                let started = Instant::now();
                let status = rpc.send(&client, archive.bytes.clone()).await?;
                seconds.push(started.elapsed().as_secs_f64());
                if status.code() != tonic::Code::InvalidArgument {
                    return Err(BenchError::check(format!(
                        "{} answered {:?} to {}, not INVALID_ARGUMENT: {}",
                        rpc.name(),
                        status.code(),
                        archive.name,
                        status.message()
                    )));
                }
                answer = Some(shorten(status.message(), 160));
            }
            outcome.figures.push(
                Figure::new(
                    &format!("{}, {}", archive.name, rpc.name()),
                    "s",
                    format!(
                        "{} ({} bytes) sent through {} until its INVALID_ARGUMENT answer, \
                         upload included: \"{}\"",
                        archive.what,
                        archive.bytes.len(),
                        rpc.name(),
                        answer.unwrap_or_default()
                    ),
                )
                .samples(Summary::of(&seconds))
                .target(Statistic::Max, Bound::AtMost, TARGET_SECONDS),
            );
        }
    }
    let written = daemon.disk_written()?.saturating_sub(written_before);
    outcome.figures.push(
        Figure::new(
            "written by odysseyd while refusing",
            "KB",
            format!(
                "write_bytes of /proc/<pid>/io over all {} refusals (its log included)",
                archives.len() * 2 * runs
            ),
        )
        .value(written as f64 / 1e3),
    );
    outcome.notes.push(
        "Each archive is checked whole (entries, sizes, depth and path length, how far it \
         inflates) before any of it is written: the empty files stop at the entry limit \
         (10,000), the bomb at 100 times its own size, the deep path at its length. The \
         target stays in seconds (at most 1 s for every refusal): it bounds what a client \
         can make the server do, whatever the machine's load, and the refusals take a small \
         fraction of it."
            .to_owned(),
    );
    daemon.stop().await?;
    Ok(outcome)
}

/// `text` cut to about `max` bytes (at a character boundary), marked when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let end = (0..=max)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}…", &text[..end])
}

/// A tar header for a regular file of `size` bytes (the builder adds a GNU long-name record
/// for a long path).
fn header(size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(size);
    header.set_mode(0o644);
    header
}

fn finish(builder: tar::Builder<GzEncoder<Vec<u8>>>) -> Result<Vec<u8>> {
    let gz = builder.into_inner().map_err(archive_error)?;
    gz.finish().map_err(archive_error)
}

fn archive_error(e: std::io::Error) -> BenchError {
    BenchError::check(format!("cannot write a hostile archive: {e}"))
}

fn empty_files() -> Result<Hostile> {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    for i in 0..EMPTY_FILES {
        builder
            .append_data(&mut header(0), format!("f/{i:06}"), std::io::empty())
            .map_err(archive_error)?;
    }
    Ok(Hostile {
        name: "200,000 empty files",
        what: format!("a tar.gz of {EMPTY_FILES} empty files"),
        bytes: finish(builder)?,
    })
}

fn bomb() -> Result<Hostile> {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::best()));
    builder
        .append_data(
            &mut header(BOMB_BYTES),
            "zeros.bin",
            std::io::repeat(0).take(BOMB_BYTES),
        )
        .map_err(archive_error)?;
    Ok(Hostile {
        name: "gzip bomb",
        what: format!("a tar.gz of one file of {BOMB_BYTES} zeros"),
        bytes: finish(builder)?,
    })
}

fn deep_path() -> Result<Hostile> {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    let path = "d/".repeat(DEPTH) + "f";
    builder
        .append_data(&mut header(1), path, &b"x"[..])
        .map_err(archive_error)?;
    Ok(Hostile {
        name: "10,000-deep path",
        what: format!("a tar.gz of one file under {DEPTH} nested directories"),
        bytes: finish(builder)?,
    })
}
