//! Push notifications: a client registers a webhook for a running task (a
//! `TaskPushNotificationConfig`, or `configuration.taskPushNotificationConfig` of the
//! message that starts it), and every update of the task from then on is POSTed to it as a
//! `StreamResponse` in JSON (`application/a2a+json`), in order, each retried with
//! backoff (the runtime's [`RetryingWebhook`]). Updates are read from the session's log, as
//! streams are, so a slow webhook delays nothing and misses nothing while it answers.
//!
//! The URL must match one of the operator's `a2a.push_allowed_urls` (none by default: the
//! server pushes nowhere, and cards say so): a client's webhook is a request the server
//! makes, so only the operator opens where it may go. A config lives while its task runs:
//! it is forgotten when the task ends (after its last update is delivered) or the server
//! stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use odyssey_api::a2a::v1 as pb;
use odyssey_runtime::ExecutionStatus;
use odyssey_runtime::event_hooks::{DeliveryError, RetryPolicy, RetryingWebhook};
use odyssey_runtime::provider::UrlPattern;
use odyssey_runtime::session::Subscription;
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::error::A2aError;
use super::stream::Progress;
use super::task::Ids;
use crate::grpc::{invalid, shorten};

/// The most configs one task holds.
const MAX_CONFIGS_PER_TASK: usize = 8;

/// The longest config id a client may choose.
const MAX_ID_BYTES: usize = 64;

/// Numbers registrations, so that the end of a replaced one's deliveries does not forget
/// its replacement.
static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The setting that names where pushes may go.
const SETTING: &str = "a2a.push_allowed_urls";

/// The push configs of running tasks, by task id, shared by every binding.
#[derive(Clone, Default)]
pub struct PushRegistry(Arc<Mutex<HashMap<String, Vec<Registered>>>>);

impl std::fmt::Debug for PushRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Configs hold the receivers' credentials: only their number is shown.
        write!(f, "PushRegistry({} tasks)", self.lock().len())
    }
}

struct Registered {
    config: pb::TaskPushNotificationConfig,
    /// Tells this registration from a later one of the same id.
    serial: u64,
    /// Ends its deliveries when the config is deleted or replaced.
    stop: CancellationToken,
}

/// A checked config, ready to be registered.
pub struct Checked {
    config: pb::TaskPushNotificationConfig,
    webhook: RetryingWebhook,
}

/// Checks `config` against the operator's `allowed` URLs (`field` is where the config
/// sits in the request): a URL the setting allows, a valid id and credentials. Nothing is
/// registered yet.
pub fn prepare(
    allowed: &[UrlPattern],
    mut config: pb::TaskPushNotificationConfig,
    field: &str,
) -> Result<Checked, Status> {
    if allowed.is_empty() {
        return Err(A2aError::PushNotificationNotSupported.into());
    }
    let at = |name: &str| format!("{field}{name}");
    let url = reqwest::Url::parse(&config.url).map_err(|e| {
        invalid(
            &at("url"),
            format!("`{}` is not a URL: {e}", shorten(&config.url)),
        )
    })?;
    if !allowed.iter().any(|pattern| pattern.matches(&url)) {
        return Err(Status::permission_denied(format!(
            "push notifications may not go to `{}`: the operator allows only the URLs of \
             {SETTING}",
            shorten(url.as_str())
        )));
    }
    if config.id.is_empty() {
        config.id = uuid::Uuid::new_v4().to_string();
    } else if config.id.len() > MAX_ID_BYTES
        || !config
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(invalid(
            &at("id"),
            format!(
                "is at most {MAX_ID_BYTES} letters, digits, `-`, `_` or `.`; leave it empty \
                 for one the server picks"
            ),
        ));
    }
    let mut headers = Vec::new();
    if let Some(auth) = &config.authentication {
        let scheme = if auth.scheme.is_empty() {
            "Bearer"
        } else {
            auth.scheme.as_str()
        };
        headers.push((
            "authorization".to_owned(),
            format!("{scheme} {}", auth.credentials),
        ));
    }
    if !config.token.is_empty() {
        headers.push(("x-a2a-notification-token".to_owned(), config.token.clone()));
    }
    let webhook =
        RetryingWebhook::new(url, &headers, RetryPolicy::default()).map_err(|e| match e {
            DeliveryError::Header(_) => invalid(
                &at("authentication"),
                "the scheme, credentials and token must be printable ASCII",
            ),
            other => {
                tracing::error!(error = %other, "cannot set up a push notification");
                Status::internal("internal error; the server log has the details")
            }
        })?;
    Ok(Checked { config, webhook })
}

impl Checked {
    /// The config for task `status`, which must still run.
    pub fn for_task(mut self, status: &ExecutionStatus) -> Result<Self, Status> {
        if status.state.is_terminal() {
            return Err(A2aError::UnsupportedOperation(format!(
                "task {} has ended; it has no more updates to push (GetTask shows it)",
                Ids::of(status).task_id
            ))
            .into());
        }
        self.config.task_id = Ids::of(status).task_id;
        Ok(self)
    }
}

impl PushRegistry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Registered>>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers `checked` for task `status`, replacing a config of the same id, and
    /// delivers the task's updates from `subscription` on until it ends, the config is
    /// deleted or `shutdown` fires. Returns the config as stored.
    pub fn register(
        &self,
        status: &ExecutionStatus,
        checked: Checked,
        subscription: Subscription,
        shutdown: &CancellationToken,
    ) -> Result<pb::TaskPushNotificationConfig, Status> {
        let Checked { config, webhook } = checked;
        let task_id = config.task_id.clone();
        let stop = shutdown.child_token();
        let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        {
            let mut tasks = self.lock();
            let configs = tasks.entry(task_id.clone()).or_default();
            if let Some(old) = configs.iter().position(|r| r.config.id == config.id) {
                configs.remove(old).stop.cancel();
            } else if configs.len() >= MAX_CONFIGS_PER_TASK {
                return Err(Status::failed_precondition(format!(
                    "task {task_id} has {MAX_CONFIGS_PER_TASK} push notification configs, the \
                     most a task holds; delete one first"
                )));
            }
            configs.push(Registered {
                config: config.clone(),
                serial,
                stop: stop.clone(),
            });
        }
        let progress = Progress::new(Ids::of(status), status.execution_id);
        let registry = self.clone();
        let (task, id) = (task_id, config.id.clone());
        tokio::spawn(async move {
            deliver(webhook, progress, subscription, &stop, &task).await;
            registry.forget(&task, &id, serial);
        });
        Ok(config)
    }

    /// Forgets config `id` of `task`, if it is still registration `serial` (not a
    /// replacement).
    fn forget(&self, task: &str, id: &str, serial: u64) {
        let mut tasks = self.lock();
        if let Some(configs) = tasks.get_mut(task) {
            configs.retain(|r| !(r.config.id == id && r.serial == serial));
            if configs.is_empty() {
                tasks.remove(task);
            }
        }
    }

    pub fn get(&self, task: &str, id: &str) -> Option<pb::TaskPushNotificationConfig> {
        self.lock()
            .get(task)?
            .iter()
            .find(|r| r.config.id == id)
            .map(|r| r.config.clone())
    }

    pub fn list(&self, task: &str) -> Vec<pb::TaskPushNotificationConfig> {
        self.lock()
            .get(task)
            .map(|configs| configs.iter().map(|r| r.config.clone()).collect())
            .unwrap_or_default()
    }

    /// Deletes config `id` of `task`; whether there was one.
    pub fn delete(&self, task: &str, id: &str) -> bool {
        let mut tasks = self.lock();
        let Some(configs) = tasks.get_mut(task) else {
            return false;
        };
        let Some(at) = configs.iter().position(|r| r.config.id == id) else {
            return false;
        };
        configs.remove(at).stop.cancel();
        if configs.is_empty() {
            tasks.remove(task);
        }
        true
    }
}

/// Posts every update of the turn that `subscription` reads, until it ends or `stop`.
async fn deliver(
    webhook: RetryingWebhook,
    mut progress: Progress,
    mut subscription: Subscription,
    stop: &CancellationToken,
    task: &str,
) {
    loop {
        let batch = tokio::select! {
            () = stop.cancelled() => return,
            batch = subscription.next_batch() => match batch {
                Ok(Some(batch)) => batch,
                // The session was deleted, or its log cannot be read: nothing more comes.
                Ok(None) | Err(_) => return,
            },
        };
        for event in &batch {
            for item in progress.items(event) {
                let body = match odyssey_api::json::to_string(&item) {
                    Ok(body) => body,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot encode an A2A push notification");
                        continue;
                    }
                };
                match webhook
                    .post("application/a2a+json", body.into_bytes(), stop)
                    .await
                {
                    Ok(()) => {}
                    Err(DeliveryError::Stopped) => return,
                    Err(e) => {
                        tracing::warn!(task, error = %e, "an A2A push notification was not delivered");
                    }
                }
            }
            if progress.ended {
                return;
            }
        }
    }
}
