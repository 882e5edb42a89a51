//! Rows for `SessionService`.

use odyssey_api::v1 as pb;

use super::{Case, UNKNOWN_ID, case, done, first, huge};

fn create(c: &super::Ctx) -> pb::CreateSessionRequest {
    pb::CreateSessionRequest {
        bundle_reference: c.reference.clone(),
        ..Default::default()
    }
}

fn model(provider: &str, name: &str) -> Option<pb::ModelSpec> {
    Some(pb::ModelSpec {
        provider: provider.into(),
        name: name.into(),
        config: None,
    })
}

pub(super) fn cases() -> Vec<Case> {
    let mut cases = vec![
        case!(
            "SessionService/CreateSession",
            "missing bundle reference",
            InvalidArgument,
            Some("bundle_reference"),
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "malformed bundle reference",
            InvalidArgument,
            Some("bundle_reference"),
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            bundle_reference: "matrix@one".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "huge bundle reference",
            InvalidArgument,
            Some("bundle_reference"),
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            bundle_reference: huge(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "unknown bundle",
            NotFound,
            None,
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            bundle_reference: "ghost@1.0.0".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "unknown agent",
            InvalidArgument,
            Some("agent_id"),
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            agent_id: "ghost".into(),
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "huge agent id",
            InvalidArgument,
            Some("agent_id"),
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            agent_id: huge(),
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "unknown sandbox mode number",
            InvalidArgument,
            Some("sandbox_mode"),
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            sandbox_mode: 42,
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "negative approval policy number",
            InvalidArgument,
            Some("approval_policy"),
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            approval_policy: -3,
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "model without a name",
            InvalidArgument,
            Some("model"),
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            model: model("openai", ""),
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "model of an unknown provider",
            InvalidArgument,
            Some("model"),
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            model: model("nonesuch", "x"),
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "huge model name",
            InvalidArgument,
            Some("model"),
            |c| {
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            model: model("replay", &huge()),
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "huge model config",
            InvalidArgument,
            Some("model"),
            |c| {
                let config = prost_types::Struct {
                    fields: [(
                        "notes".to_owned(),
                        prost_types::Value {
                            kind: Some(prost_types::value::Kind::StringValue(huge())),
                        },
                    )]
                    .into(),
                };
                let model = Some(pb::ModelSpec {
                    provider: "replay".into(),
                    name: "main".into(),
                    config: Some(config),
                });
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            model,
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "too many metadata entries",
            InvalidArgument,
            Some("metadata"),
            |c| {
                let metadata = (0..100)
                    .map(|i| (format!("k{i}"), "v".to_owned()))
                    .collect();
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            metadata,
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "huge metadata key",
            InvalidArgument,
            Some("metadata"),
            |c| {
                let metadata = [(huge(), "v".to_owned())].into();
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            metadata,
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/CreateSession",
            "huge metadata value",
            InvalidArgument,
            Some("metadata[team]"),
            |c| {
                let metadata = [("team".to_owned(), huge())].into();
                done(
                    c.sessions()
                        .create_session(pb::CreateSessionRequest {
                            metadata,
                            ..create(&c)
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ListSessions",
            "negative page size",
            InvalidArgument,
            Some("page_size"),
            |c| {
                done(
                    c.sessions()
                        .list_sessions(pb::ListSessionsRequest {
                            page_size: -5,
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ListSessions",
            "undecodable page token",
            InvalidArgument,
            Some("page_token"),
            |c| {
                done(
                    c.sessions()
                        .list_sessions(pb::ListSessionsRequest {
                            page_token: "%%%".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ListSessions",
            "page token the server never issued",
            InvalidArgument,
            Some("page_token"),
            |c| {
                done(
                    c.sessions()
                        .list_sessions(pb::ListSessionsRequest {
                            page_token: "Zm9yZ2Vk".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ListSessions",
            "huge bundle filter",
            InvalidArgument,
            Some("bundle"),
            |c| {
                done(
                    c.sessions()
                        .list_sessions(pb::ListSessionsRequest {
                            bundle: huge(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ListSessions",
            "huge agent filter",
            InvalidArgument,
            Some("agent_id"),
            |c| {
                done(
                    c.sessions()
                        .list_sessions(pb::ListSessionsRequest {
                            agent_id: huge(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/SubscribeSession",
            "after a sequence the session has not reached",
            InvalidArgument,
            Some("after_sequence"),
            |c| {
                first(
                    c.sessions()
                        .subscribe_session(pb::SubscribeSessionRequest {
                            session_id: c.session_id.clone(),
                            after_sequence: 1_000_000,
                        })
                        .await,
                )
                .await
            }
        ),
        case!(
            "SessionService/ExportSessionCassette",
            "nothing recorded",
            FailedPrecondition,
            None,
            |c| {
                first(
                    c.sessions()
                        .export_session_cassette(pb::ExportSessionCassetteRequest {
                            session_id: c.session_id.clone(),
                        })
                        .await,
                )
                .await
            }
        ),
        case!(
            "SessionService/ForkSession",
            "no fork point",
            InvalidArgument,
            Some("point"),
            |c| {
                done(
                    c.sessions()
                        .fork_session(pb::ForkSessionRequest {
                            session_id: c.session_id.clone(),
                            point: None,
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ForkSession",
            "turn 0",
            InvalidArgument,
            Some("after_turn"),
            |c| {
                done(
                    c.sessions()
                        .fork_session(pb::ForkSessionRequest {
                            session_id: c.session_id.clone(),
                            point: Some(pb::fork_session_request::Point::AfterTurn(0)),
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ForkSession",
            "a turn the session does not have",
            InvalidArgument,
            Some("after_turn"),
            |c| {
                done(
                    c.sessions()
                        .fork_session(pb::ForkSessionRequest {
                            session_id: c.session_id.clone(),
                            point: Some(pb::fork_session_request::Point::AfterTurn(7)),
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ForkSession",
            "a sequence that is no turn's end",
            InvalidArgument,
            Some("at_sequence"),
            |c| {
                done(
                    c.sessions()
                        .fork_session(pb::ForkSessionRequest {
                            session_id: c.session_id.clone(),
                            point: Some(pb::fork_session_request::Point::AtSequence(1_000_000)),
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/RewindSession",
            "turn 0",
            InvalidArgument,
            Some("to_turn"),
            |c| {
                done(
                    c.sessions()
                        .rewind_session(pb::RewindSessionRequest {
                            session_id: c.session_id.clone(),
                            to_turn: 0,
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/RewindSession",
            "a turn the session does not have",
            InvalidArgument,
            Some("to_turn"),
            |c| {
                done(
                    c.sessions()
                        .rewind_session(pb::RewindSessionRequest {
                            session_id: c.session_id.clone(),
                            to_turn: 7,
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/GetTurnChanges",
            "turn 0",
            InvalidArgument,
            Some("turn"),
            |c| {
                done(
                    c.sessions()
                        .get_turn_changes(pb::GetTurnChangesRequest {
                            session_id: c.session_id.clone(),
                            turn: 0,
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/GetTurnChanges",
            "a turn the session does not have",
            InvalidArgument,
            Some("turn"),
            |c| {
                done(
                    c.sessions()
                        .get_turn_changes(pb::GetTurnChangesRequest {
                            session_id: c.session_id.clone(),
                            turn: 7,
                        })
                        .await,
                )
            }
        ),
    ];
    cases.extend(id_cases());
    cases
}

/// The RPCs naming a session by id: missing, malformed, huge, unknown.
fn id_cases() -> Vec<Case> {
    vec![
        case!(
            "SessionService/GetSession",
            "missing id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .get_session(pb::GetSessionRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "SessionService/GetSession",
            "malformed id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .get_session(pb::GetSessionRequest {
                            session_id: "not-a-uuid".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/GetSession",
            "huge id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .get_session(pb::GetSessionRequest { session_id: huge() })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/GetSession",
            "unknown id",
            NotFound,
            None,
            |c| {
                done(
                    c.sessions()
                        .get_session(pb::GetSessionRequest {
                            session_id: UNKNOWN_ID.into(),
                        })
                        .await,
                )
            }
        ),
        case!("SessionService/GetSession", "nil id", NotFound, None, |c| {
            done(
                c.sessions()
                    .get_session(pb::GetSessionRequest {
                        session_id: uuid::Uuid::nil().to_string(),
                    })
                    .await,
            )
        }),
        case!(
            "SessionService/DeleteSession",
            "missing id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .delete_session(pb::DeleteSessionRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "SessionService/DeleteSession",
            "malformed id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .delete_session(pb::DeleteSessionRequest {
                            session_id: "../sessions".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/DeleteSession",
            "unknown id",
            NotFound,
            None,
            |c| {
                done(
                    c.sessions()
                        .delete_session(pb::DeleteSessionRequest {
                            session_id: UNKNOWN_ID.into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/SubscribeSession",
            "missing id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                first(
                    c.sessions()
                        .subscribe_session(pb::SubscribeSessionRequest::default())
                        .await,
                )
                .await
            }
        ),
        case!(
            "SessionService/SubscribeSession",
            "malformed id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                first(
                    c.sessions()
                        .subscribe_session(pb::SubscribeSessionRequest {
                            session_id: "123".into(),
                            after_sequence: 0,
                        })
                        .await,
                )
                .await
            }
        ),
        case!(
            "SessionService/SubscribeSession",
            "unknown id",
            NotFound,
            None,
            |c| {
                first(
                    c.sessions()
                        .subscribe_session(pb::SubscribeSessionRequest {
                            session_id: UNKNOWN_ID.into(),
                            after_sequence: 0,
                        })
                        .await,
                )
                .await
            }
        ),
        case!(
            "SessionService/ExportSessionCassette",
            "missing id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                first(
                    c.sessions()
                        .export_session_cassette(pb::ExportSessionCassetteRequest::default())
                        .await,
                )
                .await
            }
        ),
        case!(
            "SessionService/ExportSessionCassette",
            "malformed id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                first(
                    c.sessions()
                        .export_session_cassette(pb::ExportSessionCassetteRequest {
                            session_id: huge(),
                        })
                        .await,
                )
                .await
            }
        ),
        case!(
            "SessionService/ExportSessionCassette",
            "unknown id",
            NotFound,
            None,
            |c| {
                first(
                    c.sessions()
                        .export_session_cassette(pb::ExportSessionCassetteRequest {
                            session_id: UNKNOWN_ID.into(),
                        })
                        .await,
                )
                .await
            }
        ),
        case!(
            "SessionService/ListSessionTools",
            "missing id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .list_session_tools(pb::ListSessionToolsRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ListSessionTools",
            "unknown id",
            NotFound,
            None,
            |c| {
                done(
                    c.sessions()
                        .list_session_tools(pb::ListSessionToolsRequest {
                            session_id: UNKNOWN_ID.into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ListSessionTools",
            "negative page size",
            InvalidArgument,
            Some("page_size"),
            |c| {
                done(
                    c.sessions()
                        .list_session_tools(pb::ListSessionToolsRequest {
                            session_id: c.session_id.clone(),
                            page_size: -1,
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ListSessionTools",
            "forged page token",
            InvalidArgument,
            Some("page_token"),
            |c| {
                done(
                    c.sessions()
                        .list_session_tools(pb::ListSessionToolsRequest {
                            session_id: c.session_id.clone(),
                            page_token: "not a token!".into(),
                            ..Default::default()
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ForkSession",
            "missing id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .fork_session(pb::ForkSessionRequest {
                            session_id: String::new(),
                            point: Some(pb::fork_session_request::Point::AfterTurn(1)),
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ForkSession",
            "malformed id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .fork_session(pb::ForkSessionRequest {
                            session_id: huge(),
                            point: Some(pb::fork_session_request::Point::AfterTurn(1)),
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/ForkSession",
            "unknown id",
            NotFound,
            None,
            |c| {
                done(
                    c.sessions()
                        .fork_session(pb::ForkSessionRequest {
                            session_id: UNKNOWN_ID.into(),
                            point: Some(pb::fork_session_request::Point::AfterTurn(1)),
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/RewindSession",
            "missing id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .rewind_session(pb::RewindSessionRequest {
                            session_id: String::new(),
                            to_turn: 1,
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/RewindSession",
            "malformed id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .rewind_session(pb::RewindSessionRequest {
                            session_id: huge(),
                            to_turn: 1,
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/RewindSession",
            "unknown id",
            NotFound,
            None,
            |c| {
                done(
                    c.sessions()
                        .rewind_session(pb::RewindSessionRequest {
                            session_id: UNKNOWN_ID.into(),
                            to_turn: 1,
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/GetTurnChanges",
            "missing id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .get_turn_changes(pb::GetTurnChangesRequest {
                            session_id: String::new(),
                            turn: 1,
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/GetTurnChanges",
            "malformed id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.sessions()
                        .get_turn_changes(pb::GetTurnChangesRequest {
                            session_id: huge(),
                            turn: 1,
                        })
                        .await,
                )
            }
        ),
        case!(
            "SessionService/GetTurnChanges",
            "unknown id",
            NotFound,
            None,
            |c| {
                done(
                    c.sessions()
                        .get_turn_changes(pb::GetTurnChangesRequest {
                            session_id: UNKNOWN_ID.into(),
                            turn: 1,
                        })
                        .await,
                )
            }
        ),
    ]
}
