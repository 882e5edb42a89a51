//! A small tmpfs in a mount namespace of its own, for a server home that can be filled up
//! or made read-only. `chmod` does not stop root (the CI runs as root), a mount does.
//!
//! A holder process (`unshare -m`, then `sleep`) keeps the namespace and its tmpfs alive
//! across server restarts; servers enter it with `nsenter`. This process reaches the
//! files through `/proc/<holder>/root`, and remounts with `nsenter ... mount`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{Child, Command};

pub struct Tmpfs {
    holder: Child,
    pid: u32,
    /// Where the tmpfs is mounted, inside the namespace (an empty folder outside it).
    pub mountpoint: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size_mb` MiB in a new mount namespace; `Err` says why that is
    /// impossible here (not root, no `unshare`, mounts forbidden).
    pub async fn mount(size_mb: u32) -> Result<Self, String> {
        let dir = super::temp_home();
        let mountpoint = dir.path().join("home");
        std::fs::create_dir(&mountpoint).map_err(|e| e.to_string())?;
        let script = format!(
            "mount -t tmpfs -o size={size_mb}m,mode=0755 odyssey-home \"$0\" && echo mounted && exec sleep 3600"
        );
        let mut holder = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .arg(&mountpoint)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run unshare: {e}"))?;
        let pid = holder.id().ok_or("unshare exited at once")?;
        let mut stdout = holder.stdout.take().ok_or("no stdout")?;
        let mut said = String::new();
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 64];
        while !said.contains("mounted") {
            match stdout.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    let mut err = String::new();
                    if let Some(mut stderr) = holder.stderr.take() {
                        let _ = stderr.read_to_string(&mut err).await;
                    }
                    return Err(format!("unshare + mount failed: {}", err.trim()));
                }
                Ok(n) => said.push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
        Ok(Self {
            holder,
            pid,
            mountpoint,
            _dir: dir,
        })
    }

    /// The command a server's command line is appended to, to run inside the namespace.
    pub fn wrapper(&self) -> Vec<String> {
        ["nsenter", "-t", &self.pid.to_string(), "-m", "--"]
            .map(String::from)
            .to_vec()
    }

    /// `relative` (inside the tmpfs) as this process reaches it.
    pub fn path(&self, relative: &str) -> PathBuf {
        let inside = self.mountpoint.join(relative);
        super::procfs::in_namespace_of(self.pid, &inside)
    }

    /// Remounts read-only (`true`) or read-write.
    pub async fn remount(&self, read_only: bool) {
        let options = if read_only {
            "remount,ro"
        } else {
            "remount,rw"
        };
        let status = Command::new("nsenter")
            .args([
                "-t",
                &self.pid.to_string(),
                "-m",
                "--",
                "mount",
                "-o",
                options,
            ])
            .arg(&self.mountpoint)
            .status()
            .await
            .expect("nsenter runs");
        assert!(status.success(), "mount -o {options} failed");
    }

    /// Fills the file system with `name` until it is full; returns the bytes written.
    pub fn fill(&self, name: &str) -> u64 {
        use std::io::Write;
        let mut file = std::fs::File::create(self.path(name)).expect("filler file");
        let chunk = vec![0u8; 64 * 1024];
        let mut written = 0u64;
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(n) => written += n as u64,
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
        written
    }

    /// Frees what [`Tmpfs::fill`] took.
    pub fn free(&self, name: &str) {
        std::fs::remove_file(self.path(name)).expect("remove filler");
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = self.holder.start_kill();
    }
}
