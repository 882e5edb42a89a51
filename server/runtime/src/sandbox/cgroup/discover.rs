//! Finding the control groups the server may make session groups in, once per process.
//!
//! The server's own cgroup in each hierarchy is where it may have been given a subtree:
//! `/proc/self/cgroup` names it, `/proc/self/mountinfo` says where its hierarchy is
//! mounted. cgroup v2 is preferred; a controller it lacks (on a hybrid host the unified
//! hierarchy often has neither `memory` nor `pids`) is looked for in the v1 hierarchy that
//! carries it. A hierarchy is used only when the server may write its own cgroup there:
//! root, or a subtree delegated to its user.
//!
//! # cgroup v2 delegation
//!
//! v2 forbids processes in a cgroup whose controllers are enabled for its children (the
//! "no internal processes" rule). With systemd's `Delegate=yes` the server starts alone in
//! its unit's cgroup, so it first moves itself into a leaf child, [`V2_SERVER_LEAF`], then
//! enables `memory` and `pids` in its cgroup's `cgroup.subtree_control`; session groups are
//! then siblings of that leaf. Only the server's own process is moved: if anything else
//! shares its cgroup (a login shell's scope), v2 is not used, rather than moving processes
//! that are not the server's, and a failed attempt is undone.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::{CgroupVersion, Controller, controller_names, write_file};

/// The leaf a v2 server moves itself into before enabling controllers for its children.
pub(crate) const V2_SERVER_LEAF: &str = "odysseyd";

/// A hierarchy where session groups can be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hierarchy {
    pub version: CgroupVersion,
    /// The server's own cgroup there; session groups go beneath it.
    pub base: PathBuf,
    pub memory: bool,
    pub pids: bool,
}

impl Hierarchy {
    pub(crate) fn has(&self, controller: Controller) -> bool {
        match controller {
            Controller::Memory => self.memory,
            Controller::Pids => self.pids,
        }
    }
}

/// What the host offers, found once.
#[derive(Clone, Debug, Default)]
pub(crate) struct Discovery {
    pub hierarchies: Vec<Hierarchy>,
    /// Why a hierarchy that exists could not be used.
    pub notes: Vec<String>,
}

/// The process-wide discovery: a v2 server moves itself into its leaf once, however many
/// sandboxes the process makes.
pub(crate) fn discovered() -> &'static Discovery {
    static DISCOVERED: OnceLock<Discovery> = OnceLock::new();
    DISCOVERED.get_or_init(|| {
        let memberships = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        discover(&parse_memberships(&memberships), &parse_mounts(&mounts))
    })
}

/// One line of `/proc/self/cgroup`: `ID:CONTROLLERS:PATH`.
#[derive(Debug, PartialEq, Eq)]
struct Membership {
    /// Empty for the v2 line (`0::/path`); v1 lists its controllers (and `name=...`).
    controllers: Vec<String>,
    path: PathBuf,
}

/// A cgroup file system mount from `/proc/self/mountinfo`.
#[derive(Debug, PartialEq, Eq)]
struct Mount {
    /// The folder of the hierarchy that is mounted (not `/` under a cgroup namespace
    /// entered after mounting).
    root: PathBuf,
    point: PathBuf,
    version: CgroupVersion,
    /// The super options of a v1 mount: its controllers among them.
    options: Vec<String>,
}

fn discover(memberships: &[Membership], mounts: &[Mount]) -> Discovery {
    let mut found = Discovery::default();
    let v2 = memberships.iter().find(|m| m.controllers.is_empty());
    let v2_mount = mounts.iter().find(|m| m.version == CgroupVersion::V2);
    if let (Some(member), Some(mount)) = (v2, v2_mount)
        && let Some(own) = own_dir(mount, &member.path)
    {
        let offered = fs::read_to_string(own.join("cgroup.controllers")).unwrap_or_default();
        let offered: Vec<&str> = offered.split_whitespace().collect();
        let memory = offered.contains(&"memory");
        let pids = offered.contains(&"pids");
        if memory || pids {
            match delegate_v2(&own, memory, pids) {
                Ok(()) => found.hierarchies.push(Hierarchy {
                    version: CgroupVersion::V2,
                    base: own,
                    memory,
                    pids,
                }),
                Err(e) => found.notes.push(format!(
                    "cgroup v2 {} is not usable for session groups ({e}); run odysseyd in \
                     a cgroup of its own delegated to it (systemd Delegate=yes)",
                    own.display()
                )),
            }
        }
    }
    for controller in [Controller::Memory, Controller::Pids] {
        if found.hierarchies.iter().any(|h| h.has(controller)) {
            continue;
        }
        let name = controller.name();
        let member = memberships
            .iter()
            .find(|m| m.controllers.iter().any(|c| c == name));
        let mount = mounts
            .iter()
            .find(|m| m.version == CgroupVersion::V1 && m.options.iter().any(|o| o == name));
        let (Some(member), Some(mount)) = (member, mount) else {
            continue;
        };
        let Some(own) = own_dir(mount, &member.path) else {
            continue;
        };
        if let Some(shared) = found.hierarchies.iter_mut().find(|h| h.base == own) {
            // Both controllers in one v1 hierarchy (`-o memory,pids`).
            shared.memory |= controller == Controller::Memory;
            shared.pids |= controller == Controller::Pids;
            continue;
        }
        if rustix::fs::access(&own, rustix::fs::Access::WRITE_OK).is_err() {
            found.notes.push(format!(
                "cgroup v1 {name} {} is not writable by the server; sessions' {name} is \
                 not limited by a cgroup",
                own.display()
            ));
            continue;
        }
        found.hierarchies.push(Hierarchy {
            version: CgroupVersion::V1,
            base: own,
            memory: controller == Controller::Memory,
            pids: controller == Controller::Pids,
        });
    }
    found
}

/// The server's own cgroup folder: the mount point plus its path below the mount's root.
fn own_dir(mount: &Mount, path: &Path) -> Option<PathBuf> {
    let below = path.strip_prefix(&mount.root).ok()?;
    let dir = mount.point.join(below);
    dir.is_dir().then_some(dir)
}

/// Moves this process into `own/odysseyd` and enables the controllers for `own`'s
/// children (see the module documentation).
fn delegate_v2(own: &Path, memory: bool, pids: bool) -> io::Result<()> {
    let wanted = controller_names(memory, pids);
    let enabled = fs::read_to_string(own.join("cgroup.subtree_control"))?;
    let enabled: Vec<&str> = enabled.split_whitespace().collect();
    if wanted.iter().all(|c| enabled.contains(c)) {
        return Ok(());
    }
    for file in ["cgroup.procs", "cgroup.subtree_control"] {
        rustix::fs::access(own.join(file), rustix::fs::Access::WRITE_OK)
            .map_err(|_| io::Error::other(format!("{file} is not writable by the server")))?;
    }
    // Checked first, so that a cgroup shared with others (a login shell's scope) is left
    // exactly as it was.
    let ours = std::process::id().to_string();
    let members = fs::read_to_string(own.join("cgroup.procs"))?;
    if members.lines().any(|pid| pid.trim() != ours) {
        return Err(io::Error::other("other processes share it"));
    }
    let leaf = own.join(V2_SERVER_LEAF);
    match fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    // "0" is the writing process: all of its threads move together.
    write_file(&leaf.join("cgroup.procs"), "0")?;
    let request: Vec<String> = wanted.iter().map(|c| format!("+{c}")).collect();
    write_file(&own.join("cgroup.subtree_control"), &request.join(" ")).map_err(|e| {
        // Back to where it was: nothing of the attempt stays.
        let _ = write_file(&own.join("cgroup.procs"), "0");
        let _ = fs::remove_dir(&leaf);
        io::Error::new(
            e.kind(),
            format!("enabling {} for its children: {e}", wanted.join(", ")),
        )
    })
}

fn parse_memberships(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            Some(Membership {
                controllers: controllers
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect(),
                path: PathBuf::from(path),
            })
        })
        .collect()
}

/// The cgroup mounts among `mountinfo` lines: `ID PARENT MAJ:MIN ROOT POINT OPTIONS
/// [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS`.
fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let mut tail = after.split(' ');
            let version = match tail.next()? {
                "cgroup2" => CgroupVersion::V2,
                "cgroup" => CgroupVersion::V1,
                _ => return None,
            };
            let _source = tail.next()?;
            let options = tail.next().unwrap_or_default();
            Some(Mount {
                root: PathBuf::from(unescape(fields.get(3)?)),
                point: PathBuf::from(unescape(fields.get(4)?)),
                version,
                options: options.split(',').map(str::to_owned).collect(),
            })
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash in paths as `\ooo` octal escapes.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(digits) => {
                let value = digits
                    .iter()
                    .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw
50 23 0:40 /odd /mnt/with\\040space rw - cgroup2 cgroup2 rw,nsdelegate";

    #[test]
    fn mountinfo_lines_parse_with_optional_fields_and_escapes() {
        let mounts = parse_mounts(MOUNTINFO);
        assert_eq!(mounts.len(), 5, "{mounts:?}");
        assert_eq!(mounts[0].point, Path::new("/sys/fs/cgroup/memory"));
        assert_eq!(mounts[0].version, CgroupVersion::V1);
        assert!(mounts[0].options.iter().any(|o| o == "memory"));
        assert_eq!(mounts[3].version, CgroupVersion::V2);
        assert_eq!(mounts[4].root, Path::new("/odd"));
        assert_eq!(mounts[4].point, Path::new("/mnt/with space"));
    }

    #[test]
    fn cgroup_lines_parse() {
        let parsed = parse_memberships("9:name=systemd:/\n4:memory:/jobs/a:b\n0::/user.slice\n");
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[1].controllers, vec!["memory".to_owned()]);
        assert_eq!(parsed[1].path, Path::new("/jobs/a:b"));
        assert!(parsed[2].controllers.is_empty());
        assert_eq!(parsed[2].path, Path::new("/user.slice"));
    }

    #[test]
    fn the_own_cgroup_is_found_below_the_mount_root() {
        let mount = Mount {
            root: PathBuf::from("/"),
            point: PathBuf::from("/"),
            version: CgroupVersion::V1,
            options: Vec::new(),
        };
        assert_eq!(
            own_dir(&mount, Path::new("/proc")),
            Some(PathBuf::from("/proc"))
        );
        let elsewhere = Mount {
            root: PathBuf::from("/a"),
            ..mount
        };
        assert_eq!(own_dir(&elsewhere, Path::new("/b")), None);
    }

    /// v2 delegation, on the files of a cgroup laid out in a plain folder (a v1 host has
    /// no v2 hierarchy with these controllers to try it on).
    #[test]
    fn a_v2_cgroup_is_delegated_only_when_the_server_is_alone_in_it() {
        let own = tempfile::tempdir().expect("tempdir");
        let own = own.path();
        fs::write(own.join("cgroup.subtree_control"), "").expect("write");
        fs::write(
            own.join("cgroup.procs"),
            format!("1\n{}\n", std::process::id()),
        )
        .expect("write");
        let err = delegate_v2(own, true, true).expect_err("shared");
        assert!(err.to_string().contains("other processes"), "{err}");
        assert!(
            !own.join(V2_SERVER_LEAF).exists(),
            "the attempt left a leaf"
        );
        assert_eq!(
            fs::read_to_string(own.join("cgroup.subtree_control")).expect("read"),
            ""
        );

        fs::write(
            own.join("cgroup.procs"),
            format!("{}\n", std::process::id()),
        )
        .expect("write");
        let leaf = own.join(V2_SERVER_LEAF);
        fs::create_dir(&leaf).expect("mkdir");
        fs::write(leaf.join("cgroup.procs"), "").expect("write");
        delegate_v2(own, true, true).expect("alone");
        assert_eq!(
            fs::read_to_string(leaf.join("cgroup.procs")).expect("read"),
            "0"
        );
        assert_eq!(
            fs::read_to_string(own.join("cgroup.subtree_control")).expect("read"),
            "+memory +pids"
        );
    }

    #[test]
    fn hierarchies_without_the_controllers_are_not_used() {
        // Only the unified hierarchy, offering neither controller: nothing to use.
        let memberships = parse_memberships("0::/\n");
        let mounts = parse_mounts("41 31 0:38 / /proc rw - cgroup2 cgroup2 rw");
        let found = discover(&memberships, &mounts);
        assert!(found.hierarchies.is_empty(), "{found:?}");
    }
}
