//! One setting, described once: its key in the file, its flag (and so its environment
//! variable: `ODYSSEY_` + the flag's name, `--worker-count` → `ODYSSEY_WORKER_COUNT`),
//! whether it is a secret or a requirement, and how its value is read from and written
//! into the configuration. Layers, `config show` and validation all work from this one
//! description, so adding a key is one entry in `settings.rs`.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Serialize;
use serde::de::DeserializeOwned;
use toml::Value;

use super::{LogFormat, ServeArgs};
use odyssey_runtime::SandboxMode;
use odyssey_runtime::snapshot::MechanismChoice;

/// Why a value was refused; `index` points into an array of tables (which
/// `[[models.override]]` entry), so the error can name its line.
#[derive(Debug)]
pub struct ValueError {
    pub message: String,
    pub index: Option<usize>,
}

impl From<String> for ValueError {
    fn from(message: String) -> Self {
        Self {
            message,
            index: None,
        }
    }
}

impl From<&str> for ValueError {
    fn from(message: &str) -> Self {
        message.to_owned().into()
    }
}

/// Checks that a later requirement is no looser than an earlier one.
pub type Narrowing = fn(earlier: &Value, later: &Value) -> Result<(), String>;

type Read<C> = Box<dyn Fn(&C) -> Option<Value>>;
type Write<C> = Box<dyn Fn(&mut C, Value) -> Result<(), ValueError>>;
type FromFlags = Box<dyn Fn(&ServeArgs) -> Option<Value>>;
type FromEnv = Box<dyn Fn(&str) -> Result<Value, String>>;

/// A setting of a configuration `C` (the server's, or one provider's).
pub struct Setting<C> {
    /// `section.key` (`server.worker_count`); for provider settings, the key inside
    /// `[providers.<name>]`.
    pub key: &'static str,
    pub flag: Option<&'static str>,
    /// Masked in every output.
    pub secret: bool,
    /// Set only in the files that may hold requirements, and only ever narrowed.
    pub narrowing: Option<Narrowing>,
    read: Read<C>,
    write: Write<C>,
    from_flags: Option<FromFlags>,
    from_env: Option<FromEnv>,
}

impl<C: 'static> Setting<C> {
    /// A setting whose value is a `T` in the file: `get` reads it from a configuration
    /// (`None`: unset), `set` checks and stores it.
    pub fn new<T>(
        key: &'static str,
        get: impl Fn(&C) -> Option<T> + 'static,
        set: impl Fn(&mut C, T) -> Result<(), ValueError> + 'static,
    ) -> Self
    where
        T: Serialize + DeserializeOwned + 'static,
    {
        Self {
            key,
            flag: None,
            secret: false,
            narrowing: None,
            read: Box::new(move |config| get(config).and_then(|v| Value::try_from(v).ok())),
            write: Box::new(move |config, value| {
                let typed = T::deserialize(value).map_err(|e| e.message().to_owned())?;
                set(config, typed)
            }),
            from_flags: None,
            from_env: None,
        }
    }

    /// The flag that sets it (given: `Some`), which also names its environment variable.
    pub fn flag<T>(
        mut self,
        flag: &'static str,
        get: impl Fn(&ServeArgs) -> Option<T> + 'static,
    ) -> Self
    where
        T: Serialize + EnvText + 'static,
    {
        self.flag = Some(flag);
        self.from_flags = Some(Box::new(move |args| {
            get(args).and_then(|v| Value::try_from(v).ok())
        }));
        self.from_env = Some(Box::new(|text| {
            let typed = T::from_env(text)?;
            Value::try_from(typed).map_err(|e| e.to_string())
        }));
        self
    }

    pub fn secret(mut self) -> Self {
        self.secret = true;
        self
    }

    /// Marks a requirement: `narrowing` refuses a later value looser than an earlier one.
    pub fn requirement(mut self, narrowing: Narrowing) -> Self {
        self.narrowing = Some(narrowing);
        self
    }

    pub fn read(&self, config: &C) -> Option<Value> {
        (self.read)(config)
    }

    pub fn write(&self, config: &mut C, value: Value) -> Result<(), ValueError> {
        (self.write)(config, value)
    }

    pub fn flag_value(&self, args: &ServeArgs) -> Option<Value> {
        self.from_flags.as_ref().and_then(|f| f(args))
    }

    /// The `ODYSSEY_*` variable of a setting that has a flag.
    pub fn env_var(&self) -> Option<String> {
        self.flag.map(env_var_of)
    }

    pub fn parse_env(&self, text: &str) -> Option<Result<Value, String>> {
        self.from_env.as_ref().map(|parse| parse(text))
    }
}

/// `--worker-count` → `ODYSSEY_WORKER_COUNT`.
pub fn env_var_of(flag: &str) -> String {
    format!(
        "ODYSSEY_{}",
        flag.trim_start_matches('-')
            .replace('-', "_")
            .to_uppercase()
    )
}

/// A value as an environment variable spells it: plain text, lists of paths separated by
/// `:` (like `PATH`), other lists by `,`.
pub trait EnvText: Sized {
    fn from_env(text: &str) -> Result<Self, String>;
}

macro_rules! env_from_str {
    ($($t:ty => $what:literal),* $(,)?) => {$(
        impl EnvText for $t {
            fn from_env(text: &str) -> Result<Self, String> {
                text.trim()
                    .parse()
                    .map_err(|_| format!("`{text}` is not {}", $what))
            }
        }
    )*};
}

env_from_str! {
    usize => "a non-negative integer",
    u32 => "a non-negative integer",
    u64 => "a non-negative integer",
    SocketAddr => "an address such as 127.0.0.1:8472",
}

impl EnvText for String {
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(text.to_owned())
    }
}

impl EnvText for PathBuf {
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(PathBuf::from(text))
    }
}

impl EnvText for bool {
    fn from_env(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!(
                "`{text}` is not a boolean (true/false, 1/0, yes/no, on/off)"
            )),
        }
    }
}

impl EnvText for Vec<String> {
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect())
    }
}

impl EnvText for Vec<PathBuf> {
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(std::env::split_paths(text)
            .filter(|p| !p.as_os_str().is_empty())
            .collect())
    }
}

impl EnvText for SandboxMode {
    fn from_env(text: &str) -> Result<Self, String> {
        SandboxMode::parse(text.trim()).ok_or_else(|| {
            format!(
                "`{text}` is not a sandbox mode (read_only, workspace_write, danger_full_access)"
            )
        })
    }
}

impl EnvText for MechanismChoice {
    fn from_env(text: &str) -> Result<Self, String> {
        match text.trim() {
            "auto" => Ok(Self::Auto),
            "overlay" => Ok(Self::Overlay),
            "copies" => Ok(Self::Copies),
            _ => Err(format!(
                "`{text}` is not a snapshot mechanism (auto, overlay, copies)"
            )),
        }
    }
}

impl EnvText for LogFormat {
    fn from_env(text: &str) -> Result<Self, String> {
        match text.trim() {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            _ => Err(format!("`{text}` is not a log format (text, json)")),
        }
    }
}
