//! Typed session calls.

use std::collections::{BTreeMap, HashMap};

use odyssey_api::v1 as pb;

use crate::bundles::PAGE_SIZE;
use crate::client::OdysseyClient;
use crate::error::ClientError;
use crate::events::{EventStream, ReconnectPolicy};

/// What a new session may change from the bundle's defaults. Unset fields keep the
/// server's choice (default agent, the agent's model, the manifest's sandbox mode).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionOptions {
    pub agent_id: Option<String>,
    pub model: Option<pb::ModelSpec>,
    pub sandbox_mode: Option<pb::SandboxMode>,
    pub approval_policy: Option<pb::ApprovalPolicy>,
    pub metadata: BTreeMap<String, String>,
    /// Tokens (input + output) the session may spend [default: the server's].
    pub token_budget: Option<u64>,
}

/// Which sessions [`OdysseyClient::list_sessions`] returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionFilter {
    /// Bundle name or `ns/name`.
    pub bundle: Option<String>,
    pub agent_id: Option<String>,
    /// Only the sub-agent sessions this session started.
    pub parent_session_id: Option<String>,
    /// Stop after this many sessions; all of them when `None`.
    pub limit: Option<usize>,
}

impl OdysseyClient {
    /// Opens a session on an installed bundle.
    pub async fn create_session(
        &self,
        bundle_reference: &str,
        options: SessionOptions,
    ) -> Result<pb::Session, ClientError> {
        let request = pb::CreateSessionRequest {
            bundle_reference: bundle_reference.to_owned(),
            agent_id: options.agent_id.unwrap_or_default(),
            model: options.model,
            sandbox_mode: options
                .sandbox_mode
                .unwrap_or(pb::SandboxMode::Unspecified)
                .into(),
            approval_policy: options
                .approval_policy
                .unwrap_or(pb::ApprovalPolicy::Unspecified)
                .into(),
            metadata: options.metadata.into_iter().collect::<HashMap<_, _>>(),
            token_budget: options.token_budget.unwrap_or(0),
        };
        let response = self.sessions().create_session(request).await?.into_inner();
        response
            .session
            .ok_or_else(|| ClientError::Protocol("CreateSession answered without a session".into()))
    }

    pub async fn get_session(&self, session_id: &str) -> Result<pb::Session, ClientError> {
        let request = pb::GetSessionRequest {
            session_id: session_id.to_owned(),
        };
        let response = crate::retry::read(|| async {
            Ok(self.sessions().get_session(request.clone()).await?)
        })
        .await?
        .into_inner();
        response
            .session
            .ok_or_else(|| ClientError::Protocol("GetSession answered without a session".into()))
    }

    /// Sessions matching `filter`, following pages until the limit or the last page.
    pub async fn list_sessions(
        &self,
        filter: &SessionFilter,
    ) -> Result<Vec<pb::Session>, ClientError> {
        let limit = filter.limit.unwrap_or(usize::MAX);
        let mut sessions = Vec::new();
        let mut page_token = String::new();
        while sessions.len() < limit {
            let wanted = i32::try_from(limit - sessions.len())
                .unwrap_or(PAGE_SIZE)
                .min(PAGE_SIZE);
            let request = pb::ListSessionsRequest {
                page_size: wanted,
                page_token: std::mem::take(&mut page_token),
                bundle: filter.bundle.clone().unwrap_or_default(),
                agent_id: filter.agent_id.clone().unwrap_or_default(),
                parent_session_id: filter.parent_session_id.clone().unwrap_or_default(),
            };
            let page = crate::retry::read(|| async {
                Ok(self.sessions().list_sessions(request.clone()).await?)
            })
            .await?
            .into_inner();
            sessions.extend(page.sessions);
            if page.next_page_token.is_empty() {
                break;
            }
            page_token = page.next_page_token;
        }
        sessions.truncate(limit);
        Ok(sessions)
    }

    /// Cancels the session's turns and removes it.
    pub async fn delete_session(&self, session_id: &str) -> Result<(), ClientError> {
        let request = pb::DeleteSessionRequest {
            session_id: session_id.to_owned(),
        };
        self.sessions().delete_session(request).await?;
        Ok(())
    }

    /// A new session whose history is `session_id`'s up to the end of turn `after_turn`
    /// (1 for the first) and whose workspace is what it held then. The source is
    /// untouched.
    pub async fn fork_session(
        &self,
        session_id: &str,
        after_turn: u64,
    ) -> Result<pb::Session, ClientError> {
        self.fork_session_at(
            session_id,
            pb::fork_session_request::Point::AfterTurn(after_turn),
        )
        .await
    }

    /// [`fork_session`](Self::fork_session) from a turn's end given by turn number or by
    /// the sequence of its `turn_completed` event.
    pub async fn fork_session_at(
        &self,
        session_id: &str,
        point: pb::fork_session_request::Point,
    ) -> Result<pb::Session, ClientError> {
        let request = pb::ForkSessionRequest {
            session_id: session_id.to_owned(),
            point: Some(point),
        };
        let response = self.sessions().fork_session(request).await?.into_inner();
        response
            .session
            .ok_or_else(|| ClientError::Protocol("ForkSession answered without a session".into()))
    }

    /// Puts the session's conversation and workspace back to the end of turn `to_turn`;
    /// answers the session and the `session_rewound` event recording it.
    pub async fn rewind_session(
        &self,
        session_id: &str,
        to_turn: u64,
    ) -> Result<pb::RewindSessionResponse, ClientError> {
        let request = pb::RewindSessionRequest {
            session_id: session_id.to_owned(),
            to_turn,
        };
        Ok(self.sessions().rewind_session(request).await?.into_inner())
    }

    /// The files turn `turn` added, changed or removed in the workspace, with unified
    /// diffs of text files.
    pub async fn get_turn_changes(
        &self,
        session_id: &str,
        turn: u64,
    ) -> Result<pb::GetTurnChangesResponse, ClientError> {
        let request = pb::GetTurnChangesRequest {
            session_id: session_id.to_owned(),
            turn,
        };
        let response = crate::retry::read(|| async {
            Ok(self.sessions().get_turn_changes(request.clone()).await?)
        })
        .await?;
        Ok(response.into_inner())
    }

    /// The cassette the server recorded for a session (a server started with
    /// `--record-cassettes`): JSON Lines the `replay` provider plays, to rerun the session
    /// offline from a bundle's `cassettes/<model>.jsonl`.
    pub async fn export_session_cassette(&self, session_id: &str) -> Result<Vec<u8>, ClientError> {
        let request = pb::ExportSessionCassetteRequest {
            session_id: session_id.to_owned(),
        };
        let mut stream = self
            .sessions()
            .export_session_cassette(request)
            .await?
            .into_inner();
        let mut cassette = Vec::new();
        while let Some(message) = stream.message().await? {
            cassette.extend_from_slice(&message.chunk);
        }
        Ok(cassette)
    }

    /// Every tool the session's agent is offered (builtin, host and MCP ones, sorted by
    /// name), read page by page, with the agent's MCP servers that could not be started
    /// (`mcp_server_errors`). The server starts those not running in the session's cell.
    pub async fn list_session_tools(
        &self,
        session_id: &str,
    ) -> Result<pb::ListSessionToolsResponse, ClientError> {
        let mut all = pb::ListSessionToolsResponse::default();
        let mut page_token = String::new();
        loop {
            let request = pb::ListSessionToolsRequest {
                session_id: session_id.to_owned(),
                page_size: PAGE_SIZE,
                page_token: std::mem::take(&mut page_token),
            };
            let page = crate::retry::read(|| async {
                Ok(self.sessions().list_session_tools(request.clone()).await?)
            })
            .await?
            .into_inner();
            all.tools.extend(page.tools);
            all.mcp_server_errors = page.mcp_server_errors;
            if page.next_page_token.is_empty() {
                return Ok(all);
            }
            page_token = page.next_page_token;
        }
    }

    /// Follows a session's events after `after_sequence` (0 = from the start): stored ones
    /// first, then live ones. The stream resubscribes by itself after a dropped connection;
    /// see [`EventStream`]. The subscription is open on the server when this returns.
    pub async fn subscribe(
        &self,
        session_id: &str,
        after_sequence: u64,
    ) -> Result<EventStream, ClientError> {
        EventStream::open(
            self.sessions(),
            session_id,
            after_sequence,
            ReconnectPolicy::default(),
        )
        .await
    }

    /// [`Self::subscribe`] with a chosen reconnect policy.
    pub async fn subscribe_with(
        &self,
        session_id: &str,
        after_sequence: u64,
        policy: ReconnectPolicy,
    ) -> Result<EventStream, ClientError> {
        EventStream::open(self.sessions(), session_id, after_sequence, policy).await
    }
}
