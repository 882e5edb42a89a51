//! Workspace snapshots on a large workspace: forking a session whose `data/` holds 1 GB
//! in 10,000 files, and what the snapshot at a turn's end adds to a turn that changed one
//! file of it.
//!
//! Measured through the server under both mechanisms (`--snapshot-mechanism copies`, and
//! `overlay` where the machine mounts overlays), and the overlay layers alone in process.
//! One source session gets the large workspace (written straight into its cell, then
//! recorded by a turn). Each fork of it is timed through `ForkSession`, then runs a few
//! turns that each rewrite one file with `Write`; each of those turns is paired with the
//! same turn in an empty workspace on a daemon with snapshots off, so the difference is
//! what the snapshot (and the workspace's size) adds. The home is on disk.

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use odyssey_client::{OdysseyClient, SessionOptions, pack_files};
use odyssey_testing::openai_wire::{OpenAiWireServer, Script};

use super::Outcome;
use crate::bundle::MODEL;
use crate::daemon::MODEL_KEY;
use crate::env::{self, Env};
use crate::error::{BenchError, ClientContext, Result};
use crate::floors::Floor;
use crate::machine::filesystem_of;
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// The targets, at the p50, in milliseconds.
const FORK_P50_LIMIT_MS: f64 = 200.0;
const SNAPSHOT_P50_LIMIT_MS: f64 = 5.0;

const BUNDLE: &str = "bench-workspace";
/// Files per folder of the large workspace.
const FILES_PER_DIR: usize = 100;
/// The one file each measured turn rewrites.
const WRITE_ARGS: &str = r#"{"path": "notes/today.md", "content": "one line changed\n"}"#;

pub async fn run(env: &Env) -> Result<Outcome> {
    let files = env.settings.workspace_files.max(1);
    let bytes = env.settings.workspace_bytes.max(files as u64);
    let mut outcome = Outcome::default();
    // Both mechanisms through the server: copies always, overlay layers where this
    // machine mounts them (the server refuses to start with `overlay` otherwise).
    through_server(env, "copies", &mut outcome).await?;
    let probe_dir = env.tmp().join("workspace-probe");
    match odyssey_runtime::snapshot::overlay::probe(&probe_dir) {
        Ok(()) => through_server(env, "overlay", &mut outcome).await?,
        Err(e) => outcome.notes.push(format!(
            "Overlay layers were not measured through the server: this machine cannot \
             mount an overlay ({e})."
        )),
    }
    overlay_layers(
        env,
        files,
        bytes,
        env.settings.workspace_forks.max(1) * env.settings.workspace_turns_per_fork.max(1),
        &mut outcome,
    )?;
    Ok(outcome)
}

/// Fork and the one-file turn snapshot through a server whose snapshots use `choice`
/// (`--snapshot-mechanism`).
async fn through_server(env: &Env, choice: &str, outcome: &mut Outcome) -> Result<()> {
    let files = env.settings.workspace_files.max(1);
    let bytes = env.settings.workspace_bytes.max(files as u64);
    let forks = env.settings.workspace_forks.max(1);
    let turns = env.settings.workspace_turns_per_fork.max(1);
    let args: Vec<String> = vec!["--snapshot-mechanism".to_owned(), choice.to_owned()];
    let home = env.home(&format!("workspace-{choice}"))?;
    let plain_home = env.home(&format!("workspace-{choice}-plain"))?;
    let model = env::model(Script::tool_loop(
        MODEL_KEY,
        "Write",
        WRITE_ARGS,
        1,
        replies::short(),
    ))
    .await?;
    let daemon = env.daemon(&home, Some(&model), &args).await?;
    let plain_args = vec!["--snapshots=false".to_owned()];
    let plain = env.daemon(&plain_home, Some(&model), &plain_args).await?;
    let client = daemon.client().await?;
    let plain_client = plain.client().await?;
    install(&client).await?;
    install(&plain_client).await?;
    let mechanism = mechanism(&client).await?;

    // The source: a first turn prepares its cell, the files are written into its
    // workspace, and a second turn records them.
    let source = session(&client).await?;
    overhead(&client, &model, &source).await?;
    let data = daemon.path_inside(&home.dir.join("sandbox").join(&source).join("data"));
    let populate = {
        let data = data.clone();
        tokio::task::spawn_blocking(move || populate(&data, files, bytes))
    };
    populate
        .await
        .map_err(|e| BenchError::check(format!("writing the workspace stopped: {e}")))??;
    let recorded = Instant::now();
    overhead(&client, &model, &source).await?;
    let first_record = recorded.elapsed();

    let mut fork_times = Vec::with_capacity(forks);
    let mut large = Vec::with_capacity(forks * turns);
    let mut empty = Vec::with_capacity(forks * turns);
    let mut added = Vec::with_capacity(forks * turns);
    for i in 0..forks + 1 {
        let started = Instant::now();
        let fork = client
            .fork_session(&source, 2)
            .await
            .context("fork the large session")?;
        let took = started.elapsed();
        let baseline = session(&plain_client).await?;
        for _ in 0..turns {
            let with_files = overhead(&client, &model, &fork.id).await?;
            let without = overhead(&plain_client, &model, &baseline).await?;
            // The first fork and its turns warm the caches up; they are not measured.
            if i > 0 {
                large.push(with_files);
                empty.push(without);
                added.push(with_files.saturating_sub(without));
            }
        }
        if i > 0 {
            fork_times.push(took);
        }
        client
            .delete_session(&fork.id)
            .await
            .context("delete a fork")?;
    }
    daemon.stop().await?;
    plain.stop().await?;

    let size = format!("{} MB in {files} files", bytes >> 20);
    outcome.figures.push(
        Figure::new(
            &format!("fork of a session with {size}, {mechanism}"),
            "ms",
            "ForkSession's wall time at the client, from a turn's end of a session whose \
             workspace holds the files, until the new session is answered",
        )
        .samples(Summary::of_millis(&fork_times))
        .against(Floor::Unary)
        .target(Statistic::P50, Bound::AtMost, FORK_P50_LIMIT_MS),
    );
    outcome.figures.push(
        Figure::new(
            &format!("snapshot of a turn changing one file of {size}, {mechanism}"),
            "ms",
            "per sample: the runtime overhead of a turn that rewrites one file with `Write` \
             in a fork of the large session (snapshots on), less that of the same turn in \
             an empty workspace on a daemon with snapshots off",
        )
        .samples(Summary::of_millis(&added))
        .against(Floor::Unary)
        .target(Statistic::P50, Bound::AtMost, SNAPSHOT_P50_LIMIT_MS),
    );
    for (name, definition, samples) in [
        (
            format!("turn rewriting one file, large workspace, {mechanism}, overhead"),
            "Run's wall time less the model server's time on the turn's two calls",
            &large,
        ),
        (
            format!(
                "turn rewriting one file, empty workspace without snapshots (beside \
                 {mechanism}), overhead"
            ),
            "Run's wall time less the model server's time on the turn's two calls",
            &empty,
        ),
    ] {
        outcome.figures.push(
            Figure::new(&name, "ms", definition)
                .samples(Summary::of_millis(samples))
                .against(Floor::Unary),
        );
    }
    outcome.figures.push(
        Figure::new(
            &format!("first snapshot of the large workspace, {mechanism}"),
            "ms",
            "the wall time of the turn that first records the workspace after its files \
             were written (every file read once)",
        )
        .value(first_record.as_secs_f64() * 1000.0),
    );
    outcome.notes.push(format!(
        "Mechanism: {mechanism}; the home is on {} ({}). Each fork runs {turns} measured \
         turns and is then deleted; the first fork and its turns are a warm-up.",
        home.dir.display(),
        filesystem_of(&home.dir)
    ));
    Ok(())
}

/// The same two operations made by the overlay layers of `odyssey_runtime::snapshot::overlay`
/// directly, on a workspace of the same size in the same temporary folder (on disk): a
/// turn's end that rewrote one file (unmount, the writes become a layer and are synced, a
/// fresh upper folder, mount again, the stack written), and a fork (an upper folder and
/// stack of its own over the shared layers, mounted).
fn overlay_layers(
    env: &Env,
    files: usize,
    bytes: u64,
    samples: usize,
    outcome: &mut Outcome,
) -> Result<()> {
    use odyssey_runtime::snapshot::overlay::{OverlayStore, probe};
    let root = env.tmp().join("workspace-overlay");
    if let Err(e) = probe(&root) {
        outcome.notes.push(format!(
            "Overlay layers were not measured: this process cannot mount an overlay ({e})."
        ));
        return Ok(());
    }
    let store = OverlayStore::new(root.join("overlay"));
    let cells = root.join("sandbox");
    let mut mounted = Vec::new();
    let measured = (|| -> Result<(Vec<Duration>, Vec<Duration>)> {
        let fail = |e: odyssey_runtime::snapshot::SnapshotError| BenchError::check(e.to_string());
        let data_of = |session: uuid::Uuid| -> Result<std::path::PathBuf> {
            let data = cells.join(session.to_string()).join("data");
            std::fs::create_dir_all(&data).map_err(|e| BenchError::io("create", &data, e))?;
            Ok(data)
        };
        let source = uuid::Uuid::now_v7();
        let data = data_of(source)?;
        store.mount(source, &data, None, 0o755).map_err(fail)?;
        mounted.push(data.clone());
        populate(&data, files, bytes)?;
        let first = uuid::Uuid::now_v7();
        store
            .commit(source, &data, 1, first, 1000)
            .and_then(|layer| layer.sync())
            .map_err(fail)?;
        let mut forks = Vec::with_capacity(samples);
        let mut commits = Vec::with_capacity(samples);
        for i in 0..samples + 1 {
            let fork = uuid::Uuid::now_v7();
            let fork_data = data_of(fork)?;
            let started = Instant::now();
            store.fork(source, first, fork, &fork_data).map_err(fail)?;
            let took = started.elapsed();
            store.remove(fork, &fork_data).map_err(fail)?;
            std::fs::write(data.join("notes.md"), format!("turn {i}\n"))
                .map_err(|e| BenchError::io("write in", &data, e))?;
            let started = Instant::now();
            store
                .commit(source, &data, i as u64 + 2, uuid::Uuid::now_v7(), 1000)
                .and_then(|layer| layer.sync())
                .map_err(fail)?;
            let committed = started.elapsed();
            if i > 0 {
                forks.push(took);
                commits.push(committed);
            }
        }
        store.collect_garbage().map_err(fail)?;
        Ok((forks, commits))
    })();
    for data in &mounted {
        let _ = odyssey_runtime::snapshot::overlay::unmount_overlay(data);
    }
    let (forks, commits) = measured?;
    let size = format!("{} MB in {files} files", bytes >> 20);
    outcome.figures.push(
        Figure::new(
            &format!("fork of a workspace with {size}, overlay layers alone"),
            "ms",
            "the overlay layers' own fork, in process: an upper folder and a stack of its \
             own over the source's layers of a turn, mounted (ForkSession adds the \
             session's log and record)",
        )
        .samples(Summary::of_millis(&forks))
        .target(Statistic::P50, Bound::AtMost, FORK_P50_LIMIT_MS),
    );
    outcome.figures.push(
        Figure::new(
            &format!("turn-end layer of one changed file in {size}, overlay layers alone"),
            "ms",
            "the overlay layers' own turn end, in process: unmount, the upper folder \
             becomes the turn's layer (its files synced), a fresh upper folder, mount \
             again, the stack written and synced (a server's turn end also stops the \
             session's processes)",
        )
        .samples(Summary::of_millis(&commits))
        .target(Statistic::P50, Bound::AtMost, SNAPSHOT_P50_LIMIT_MS),
    );
    Ok(())
}

/// Writes `files` files of distinct bytes, `bytes` in all, in folders of
/// [`FILES_PER_DIR`], owned as the workspace folder is.
fn populate(data: &Path, files: usize, bytes: u64) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(data).map_err(|e| BenchError::io("stat", data, e))?;
    let (uid, gid) = (owner.uid(), owner.gid());
    let per_file = bytes / files as u64;
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut buffer = vec![0u8; per_file as usize];
    for i in 0..files {
        let dir = data.join(format!("d{:03}", i / FILES_PER_DIR));
        if i % FILES_PER_DIR == 0 {
            std::fs::create_dir_all(&dir).map_err(|e| BenchError::io("create", &dir, e))?;
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| BenchError::io("chown", &dir, e))?;
        }
        // Distinct bytes per file, so no store can share one file's copy with another.
        for chunk in buffer.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let word = state.to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        let path = dir.join(format!("f{i:05}.bin"));
        let mut file =
            std::fs::File::create(&path).map_err(|e| BenchError::io("create", &path, e))?;
        file.write_all(&buffer)
            .map_err(|e| BenchError::io("write", &path, e))?;
        std::os::unix::fs::chown(&path, Some(uid), Some(gid))
            .map_err(|e| BenchError::io("chown", &path, e))?;
    }
    Ok(())
}

/// The snapshot mechanism the daemon reports.
async fn mechanism(client: &OdysseyClient) -> Result<String> {
    use odyssey_client::proto as pb;
    let info = client.server_info().await.context("GetServerInfo")?;
    let mechanism = info
        .workspace_snapshots
        .map(|s| s.mechanism)
        .and_then(|m| pb::SnapshotMechanism::try_from(m).ok())
        .unwrap_or(pb::SnapshotMechanism::Unspecified);
    Ok(match mechanism {
        pb::SnapshotMechanism::Copies => "copies",
        pb::SnapshotMechanism::Overlay => "overlay",
        pb::SnapshotMechanism::Disabled => "disabled",
        pb::SnapshotMechanism::Unspecified => "unknown mechanism",
    }
    .to_owned())
}

/// One completed turn's runtime overhead; fails unless the model served two calls.
async fn overhead(
    client: &OdysseyClient,
    model: &OpenAiWireServer,
    session: &str,
) -> Result<Duration> {
    model.take_timings();
    let run = turn::run(client, session, "Update the notes.").await?;
    let timings = model.take_timings();
    if timings.len() != 2 {
        return Err(BenchError::check(format!(
            "a turn made {} model calls instead of 2",
            timings.len()
        )));
    }
    Ok(turn::overhead(run.wall, &timings))
}

/// The bundle: one agent that may call `Write`, in a writable workspace.
async fn install(client: &OdysseyClient) -> Result<()> {
    let manifest = format!(
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {BUNDLE}\n  \
         version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      \
         default: true\n  tools:\n    - {{ name: Write, source: builtin }}\n  \
         sandbox:\n    mode: workspace_write\n"
    );
    let agent = format!(
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\n\
         spec:\n  kind: prompt\n  prompt: You are a benchmark agent. Answer briefly.\n  \
         model:\n    provider: openai\n    name: {MODEL}\n  tools:\n    allow: [Write]\n"
    );
    let archive = pack_files(&[
        ("odyssey.bundle.yaml", manifest.as_bytes()),
        ("agents/main/agent.yaml", agent.as_bytes()),
    ])
    .context("pack the workspace benchmark bundle")?;
    client
        .build_bundle(archive, "", false)
        .await
        .context("install the workspace benchmark bundle")?;
    Ok(())
}

async fn session(client: &OdysseyClient) -> Result<String> {
    let session = client
        .create_session(BUNDLE, SessionOptions::default())
        .await
        .context("create a session")?;
    Ok(session.id)
}
