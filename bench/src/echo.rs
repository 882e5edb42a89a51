//! A bare tonic server of `odyssey.v1` on loopback: `Run` answers a completed status at
//! once, and `SubscribeSession` streams a fixed number of text-delta events as fast as
//! tonic sends them. No runtime, no storage, no layers: what gRPC over loopback costs on
//! this machine at this moment, through the same client and connection settings
//! (`OdysseyClient::connect`) as the benchmarks. Every other RPC is UNIMPLEMENTED.
//!
//! It runs in a child process (this harness, started with [`ECHO_SERVER_ARG`]), as the
//! daemon does: a call crosses processes, so waking the other side is part of the floor,
//! as it is of every figure.

use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;

use futures::{Stream, StreamExt};
use odyssey_client::OdysseyClient;
use odyssey_client::proto as pb;
use pb::execution_service_server::{ExecutionService, ExecutionServiceServer};
use pb::session_service_server::{SessionService, SessionServiceServer};
use tokio::net::TcpListener;
use tokio::process::Child;
use tonic::{Request, Response, Status};

use crate::error::{BenchError, ClientContext, Result};

type Streamed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The first argument that makes this harness the echo server's process.
pub const ECHO_SERVER_ARG: &str = "__echo-server";

/// The echo server's process; killed when dropped (and when the harness dies).
pub struct EchoServer {
    url: String,
    _child: Child,
}

impl EchoServer {
    /// Starts the echo server's process; a subscription streams `events` events.
    pub async fn start(events: u64) -> Result<Self> {
        let (child, url) = crate::child::start(ECHO_SERVER_ARG, [events.to_string()]).await?;
        if !url.starts_with("http://") {
            return Err(BenchError::check(format!(
                "the echo server did not start (it said `{url}`)"
            )));
        }
        Ok(Self { url, _child: child })
    }

    /// A new client connection, made as the benchmarks make theirs.
    pub async fn client(&self) -> Result<OdysseyClient> {
        OdysseyClient::connect(self.url.clone(), None)
            .await
            .context(format!("connect to the echo server at {}", self.url))
    }
}

/// The echo server's process: serves on `127.0.0.1:0`, prints its URL, and serves until
/// killed.
pub async fn serve(events: u64) -> Result<()> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| BenchError::io("bind", "127.0.0.1:0", e))?;
    let local = listener
        .local_addr()
        .map_err(|e| BenchError::io("bind", "127.0.0.1:0", e))?;
    // As odysseyd does: Nagle's algorithm off on accepted connections.
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener).map(|c| {
        let c = c?;
        let _ = c.set_nodelay(true);
        Ok::<_, std::io::Error>(c)
    });
    let router = tonic::transport::Server::builder()
        .add_service(ExecutionServiceServer::new(Executions))
        .add_service(SessionServiceServer::new(Sessions { events }));
    println!("http://{local}");
    router
        .serve_with_incoming(incoming)
        .await
        .map_err(|e| BenchError::check(format!("the echo server stopped: {e}")))
}

struct Executions;

#[tonic::async_trait]
impl ExecutionService for Executions {
    async fn run(
        &self,
        request: Request<pb::RunRequest>,
    ) -> Result<Response<pb::RunResponse>, Status> {
        let session_id = request
            .into_inner()
            .input
            .map(|input| input.session_id)
            .unwrap_or_default();
        Ok(Response::new(pb::RunResponse {
            status: Some(pb::ExecutionStatus {
                execution_id: "echo".to_owned(),
                session_id,
                state: pb::ExecutionState::Completed as i32,
                response: "The answer is ready.".to_owned(),
                ..Default::default()
            }),
        }))
    }

    async fn submit(
        &self,
        _: Request<pb::SubmitRequest>,
    ) -> Result<Response<pb::SubmitResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn get_execution_status(
        &self,
        _: Request<pb::GetExecutionStatusRequest>,
    ) -> Result<Response<pb::GetExecutionStatusResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn cancel_execution(
        &self,
        _: Request<pb::CancelExecutionRequest>,
    ) -> Result<Response<pb::CancelExecutionResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn run_session_command(
        &self,
        _: Request<pb::RunSessionCommandRequest>,
    ) -> Result<Response<pb::RunSessionCommandResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    type StreamSessionCommandStream = Streamed<pb::StreamSessionCommandResponse>;

    async fn stream_session_command(
        &self,
        _: Request<pb::StreamSessionCommandRequest>,
    ) -> Result<Response<Self::StreamSessionCommandStream>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn send_input(
        &self,
        _: Request<pb::SendInputRequest>,
    ) -> Result<Response<pb::SendInputResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }
}

struct Sessions {
    events: u64,
}

/// An event as a busy turn's: a four-character text delta with ids of the daemon's
/// length and a timestamp.
fn delta_event(session_id: &str, sequence: u64) -> pb::SubscribeSessionResponse {
    pb::SubscribeSessionResponse {
        item: Some(pb::subscribe_session_response::Item::Event(
            pb::SessionEvent {
                id: format!("0193a4c2-7d1e-7c3a-9f00-{sequence:012}"),
                session_id: session_id.to_owned(),
                sequence,
                created_at: Some(prost_types_now()),
                turn_id: "0193a4c2-7d1e-7c3a-9f00-000000000001".to_owned(),
                payload: Some(pb::session_event::Payload::AgentMessageDelta(
                    pb::AgentMessageDelta {
                        delta: "abc ".to_owned(),
                    },
                )),
            },
        )),
    }
}

fn prost_types_now() -> prost_types::Timestamp {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    prost_types::Timestamp {
        seconds: i64::try_from(now.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(now.subsec_nanos()).unwrap_or(0),
    }
}

#[tonic::async_trait]
impl SessionService for Sessions {
    async fn create_session(
        &self,
        _: Request<pb::CreateSessionRequest>,
    ) -> Result<Response<pb::CreateSessionResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn get_session(
        &self,
        _: Request<pb::GetSessionRequest>,
    ) -> Result<Response<pb::GetSessionResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn list_sessions(
        &self,
        _: Request<pb::ListSessionsRequest>,
    ) -> Result<Response<pb::ListSessionsResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn delete_session(
        &self,
        _: Request<pb::DeleteSessionRequest>,
    ) -> Result<Response<pb::DeleteSessionResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    type SubscribeSessionStream = Streamed<pb::SubscribeSessionResponse>;

    async fn subscribe_session(
        &self,
        request: Request<pb::SubscribeSessionRequest>,
    ) -> Result<Response<Self::SubscribeSessionStream>, Status> {
        let request = request.into_inner();
        let session_id = request.session_id;
        let events = (request.after_sequence + 1..=self.events)
            .map(move |sequence| Ok(delta_event(&session_id, sequence)));
        Ok(Response::new(Box::pin(futures::stream::iter(events))))
    }

    type ExportSessionCassetteStream = Streamed<pb::ExportSessionCassetteResponse>;

    async fn export_session_cassette(
        &self,
        _: Request<pb::ExportSessionCassetteRequest>,
    ) -> Result<Response<Self::ExportSessionCassetteStream>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn list_session_tools(
        &self,
        _: Request<pb::ListSessionToolsRequest>,
    ) -> Result<Response<pb::ListSessionToolsResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn fork_session(
        &self,
        _: Request<pb::ForkSessionRequest>,
    ) -> Result<Response<pb::ForkSessionResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn rewind_session(
        &self,
        _: Request<pb::RewindSessionRequest>,
    ) -> Result<Response<pb::RewindSessionResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }

    async fn get_turn_changes(
        &self,
        _: Request<pb::GetTurnChangesRequest>,
    ) -> Result<Response<pb::GetTurnChangesResponse>, Status> {
        Err(Status::unimplemented("echo"))
    }
}
