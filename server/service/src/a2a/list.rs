//! ListTasks: the tasks of one context (a session), or of every context of the tenant's
//! agent, most recently updated first, as the specification orders them. Tasks are read
//! from the sessions' logs (see `OdysseyRuntime::session_turns`), so the list holds every
//! turn a session ever ran, across restarts. A page token is the place of the page's
//! last task in that order, bound to the request's filters: it is opaque to clients and
//! refused when it was made for other filters or was not made here.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use odyssey_api::a2a::v1 as pb;
use odyssey_runtime::{ErrorKind, OdysseyRuntime, PageRequest, SessionFilter, SessionTurn};
use serde::{Deserialize, Serialize};
use tonic::Status;
use uuid::Uuid;

use super::task::{self, Turn};
use super::tenant::{self, AgentRef};
use crate::grpc::{invalid, shorten, to_status};

/// Tasks per page when the request names no size, and the most a page holds.
pub const DEFAULT_PAGE_SIZE: usize = 50;
pub const MAX_PAGE_SIZE: usize = 100;

/// Sessions read per page of the session listing.
const SESSION_PAGE: usize = 500;

/// What a page token holds: the filters it was made for, and the last task handed out.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Cursor {
    /// The request's filters, as [`query_key`] writes them.
    q: String,
    /// The last task's update time (ms) and id.
    at: u64,
    id: String,
}

/// The filters of a request, in the form a page token keeps them.
fn query_key(request: &pb::ListTasksRequest) -> String {
    let after = request
        .status_timestamp_after
        .as_ref()
        .map(|t| format!("{}.{}", t.seconds, t.nanos))
        .unwrap_or_default();
    serde_json::json!([request.tenant, request.context_id, request.status, after]).to_string()
}

fn encode(cursor: &Cursor) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(cursor).unwrap_or_default())
}

fn decode(token: &str, query: &str) -> Result<Cursor, Status> {
    let bad = || {
        invalid(
            "page_token",
            format!(
                "`{}` is not a page token of this server; pass the nextPageToken of the \
                 previous page as it came",
                shorten(token)
            ),
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let cursor: Cursor = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if cursor.q != query {
        return Err(invalid(
            "page_token",
            "was made for other filters (tenant, contextId, status or statusTimestampAfter); \
             send the same filters with every page",
        ));
    }
    Ok(cursor)
}

/// The page size asked for: unset is the default, more than the maximum is the maximum,
/// less than one is refused.
fn page_size(value: Option<i32>) -> Result<usize, Status> {
    match value {
        None => Ok(DEFAULT_PAGE_SIZE),
        Some(n) if n < 1 => Err(invalid(
            "page_size",
            format!("is {n}; it is at least 1 (and at most {MAX_PAGE_SIZE})"),
        )),
        Some(n) => Ok((n as usize).min(MAX_PAGE_SIZE)),
    }
}

/// The state filter: unset is every state; a value the specification does not define is
/// refused.
fn state_filter(value: i32) -> Result<Option<pb::TaskState>, Status> {
    match pb::TaskState::try_from(value) {
        Ok(pb::TaskState::Unspecified) => Ok(None),
        Ok(state) => Ok(Some(state)),
        Err(_) => Err(invalid("status", format!("{value} is not a TaskState"))),
    }
}

/// One task of the listing, with its place in the order.
struct Listed {
    at: u64,
    id: String,
    turn: SessionTurn,
}

/// When a turn last changed, as far as the listing knows: its log's last event of note,
/// or, for a turn still queued, when it was submitted (its id's time).
fn updated_at_ms(turn: &SessionTurn) -> u64 {
    match &turn.logged {
        Some(logged) => logged.updated_at_ms(),
        None => turn
            .status
            .execution_id
            .get_timestamp()
            .map(|t| {
                let (secs, nanos) = t.to_unix();
                secs * 1000 + u64::from(nanos) / 1_000_000
            })
            .unwrap_or(0),
    }
}

/// Answers a ListTasks request.
pub async fn list_tasks(
    runtime: &OdysseyRuntime,
    request: pb::ListTasksRequest,
    history_length: Option<usize>,
    default_agent: Option<&str>,
) -> Result<pb::ListTasksResponse, Status> {
    let size = page_size(request.page_size)?;
    let state = state_filter(request.status)?;
    let query = query_key(&request);
    let cursor = match request.page_token.as_str() {
        "" => None,
        token => Some(decode(token, &query)?),
    };
    let after_ms = match &request.status_timestamp_after {
        None => 0,
        Some(t) if t.seconds < 0 => 0,
        Some(t) => (t.seconds as u64) * 1000 + (t.nanos.max(0) as u64) / 1_000_000,
    };
    let sessions = sessions(runtime, &request, default_agent).await?;
    let mut listed = Vec::new();
    for session_id in sessions {
        let turns = match runtime.session_turns(session_id).await {
            Ok(turns) => turns,
            // Deleted while the listing ran.
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(to_status(e)),
        };
        for turn in turns {
            let at = updated_at_ms(&turn);
            if at < after_ms {
                continue;
            }
            if state.is_some_and(|s| task::task_state(turn.status.state) != s) {
                continue;
            }
            let id = task::task_id(turn.status.session_id, turn.status.execution_id);
            listed.push(Listed { at, id, turn });
        }
    }
    // Most recently updated first; the id breaks ties, so the order is total.
    listed.sort_by(|a, b| (b.at, &b.id).cmp(&(a.at, &a.id)));
    let total = listed.len();
    let start = match &cursor {
        None => 0,
        Some(c) => listed.partition_point(|l| (l.at, l.id.as_str()) >= (c.at, c.id.as_str())),
    };
    let page: Vec<Listed> = listed.into_iter().skip(start).take(size + 1).collect();
    let more = page.len() > size;
    let page = &page[..page.len().min(size)];
    let next_page_token = match (more, page.last()) {
        (true, Some(last)) => encode(&Cursor {
            q: query,
            at: last.at,
            id: last.id.clone(),
        }),
        _ => String::new(),
    };
    let include_artifacts = request.include_artifacts.unwrap_or(false);
    let mut tasks = Vec::with_capacity(page.len());
    for listed in page {
        let status = &listed.turn.status;
        let mut turn = match &listed.turn.logged {
            Some(logged) => Turn::from_log(logged),
            None => Turn::default(),
        };
        turn.last_at_ms = listed.at;
        let mut task = task::task(status, &turn, history_length);
        if !include_artifacts {
            task.artifacts.clear();
        }
        tasks.push(task);
    }
    Ok(pb::ListTasksResponse {
        tasks,
        next_page_token,
        page_size: size as i32,
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
    })
}

/// The sessions whose tasks are listed: the request's context, or every session of the
/// tenant's agent.
async fn sessions(
    runtime: &OdysseyRuntime,
    request: &pb::ListTasksRequest,
    default_agent: Option<&str>,
) -> Result<Vec<Uuid>, Status> {
    if !request.context_id.is_empty() {
        let unknown = || {
            invalid(
                "context_id",
                format!(
                    "`{}` is not a context of this server (contexts are session ids)",
                    shorten(&request.context_id)
                ),
            )
        };
        let session_id = Uuid::try_parse(&request.context_id).map_err(|_| unknown())?;
        let session = runtime
            .get_session(session_id)
            .await
            .map_err(|e| match e.kind() {
                ErrorKind::NotFound => unknown(),
                _ => to_status(e),
            })?;
        if !request.tenant.is_empty() {
            let agent = tenant::resolve(runtime, &request.tenant, default_agent).await?;
            let record = &session.record;
            if !agent.owns(
                &record.bundle.namespace,
                &record.bundle.name,
                &record.agent_id,
            ) {
                return Err(invalid(
                    "context_id",
                    format!(
                        "context {session_id} is not one of agent `{}`'s",
                        agent.tenant()
                    ),
                ));
            }
        }
        return Ok(vec![session_id]);
    }
    let agent = tenant::resolve(runtime, &request.tenant, default_agent).await?;
    agent_sessions(runtime, &agent).await
}

/// Every session of `agent`.
async fn agent_sessions(runtime: &OdysseyRuntime, agent: &AgentRef) -> Result<Vec<Uuid>, Status> {
    let filter = SessionFilter {
        bundle: Some(format!("{}/{}", agent.namespace, agent.name)),
        agent_id: Some(agent.agent_id.clone()),
        parent_session_id: None,
    };
    let mut ids = Vec::new();
    let mut page = PageRequest::first(SESSION_PAGE);
    loop {
        let listed = runtime
            .list_sessions(filter.clone(), page)
            .await
            .map_err(to_status)?;
        ids.extend(listed.items.iter().map(|s| s.record.id));
        match listed.next_token {
            Some(token) => {
                page = PageRequest {
                    size: SESSION_PAGE,
                    token: Some(token),
                }
            }
            None => return Ok(ids),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_size_is_bounded_and_at_least_one() {
        assert_eq!(page_size(None).unwrap(), DEFAULT_PAGE_SIZE);
        assert_eq!(page_size(Some(7)).unwrap(), 7);
        assert_eq!(page_size(Some(5000)).unwrap(), MAX_PAGE_SIZE);
        assert!(page_size(Some(0)).is_err());
        assert!(page_size(Some(-3)).is_err());
    }

    #[test]
    fn a_page_token_is_refused_for_other_filters_or_when_not_made_here() {
        let request = pb::ListTasksRequest {
            context_id: "c".into(),
            ..Default::default()
        };
        let query = query_key(&request);
        let token = encode(&Cursor {
            q: query.clone(),
            at: 5,
            id: "t".into(),
        });
        let cursor = decode(&token, &query).unwrap();
        assert_eq!((cursor.at, cursor.id.as_str()), (5, "t"));
        let other = query_key(&pb::ListTasksRequest {
            context_id: "d".into(),
            ..Default::default()
        });
        let refused = decode(&token, &other).unwrap_err();
        assert!(refused.message().contains("other filters"), "{refused:?}");
        assert!(decode("not a token!", &query).is_err());
        assert!(decode(&URL_SAFE_NO_PAD.encode(b"{}"), &query).is_err());
    }

    #[test]
    fn an_unknown_state_is_refused_and_unspecified_is_no_filter() {
        assert_eq!(state_filter(0).unwrap(), None);
        assert_eq!(
            state_filter(pb::TaskState::Working as i32).unwrap(),
            Some(pb::TaskState::Working)
        );
        assert!(state_filter(99).is_err());
    }
}
