//! How an MCP tool is named to the model: `mcp__<server>__<tool>`, within the pattern
//! every provider accepts for tool names, `^[a-zA-Z0-9_-]{1,64}$`.
//!
//! The server's name already fits (the bundle's checks see to it). In the tool's name,
//! every other character becomes `_`; a name still too long is cut, and a cut or
//! changed name ends with `-` and 8 hex digits of the SHA-256 of the tool's real name, so
//! two tools of one server never share a name.

use sha2::{Digest, Sha256};

/// What every MCP tool's name starts with.
pub const PREFIX: &str = "mcp__";
/// The longest tool name providers accept.
pub const MAX_TOOL_NAME_LEN: usize = 64;
const HASH_LEN: usize = 8;

/// The name the model sees for `tool` of `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let head = format!("{PREFIX}{server}__");
    let mapped: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if mapped == tool && !tool.is_empty() && head.len() + tool.len() <= MAX_TOOL_NAME_LEN {
        return format!("{head}{tool}");
    }
    hashed(&head, &mapped, tool)
}

/// `head`, as much of `mapped` as fits, `-` and the hash of `original`.
fn hashed(head: &str, mapped: &str, original: &str) -> String {
    let digest = hex::encode(Sha256::digest(original.as_bytes()));
    let room = MAX_TOOL_NAME_LEN.saturating_sub(head.len() + 1 + HASH_LEN);
    let kept: String = mapped.chars().take(room).collect();
    format!("{head}{kept}-{}", &digest[..HASH_LEN])
}

/// The server a tool name belongs to, if it is an MCP tool's.
pub fn server_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(PREFIX)?;
    rest.split_once("__").map(|(server, _)| server)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fits(name: &str) -> bool {
        (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_fit_the_providers_pattern_and_stay_distinct() {
        assert_eq!(tool_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(tool_name("fs", "get-env"), "mcp__fs__get-env");
        let dotted = tool_name("fs", "files.read");
        assert!(
            dotted.starts_with("mcp__fs__files_read-") && fits(&dotted),
            "{dotted}"
        );
        assert_ne!(dotted, tool_name("fs", "files_read"));
        assert_ne!(tool_name("fs", "a.b"), tool_name("fs", "a/b"));
        let long = "x".repeat(100);
        let cut = tool_name("a-long-server-name", &long);
        assert!(fits(&cut) && cut.len() == MAX_TOOL_NAME_LEN, "{cut}");
        assert_ne!(cut, tool_name("a-long-server-name", &"x".repeat(101)));
        let odd = tool_name("fs", "ünïcode tool");
        assert!(fits(&odd), "{odd}");
        assert!(fits(&tool_name("fs", "")));
        assert_eq!(server_of("mcp__fs__read_file"), Some("fs"));
        assert_eq!(server_of("Read"), None);
    }
}
