//! A fake server for the approval and operator-command RPCs: canned answers over real
//! gRPC on loopback, and a record of every request, so the SDK calls and the commands on
//! top of them are tested against the proto without the runtime behind it.

use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures::Stream;
use odyssey_api::v1 as pb;
use pb::approval_service_server::{ApprovalService, ApprovalServiceServer};
use pb::execution_service_server::{ExecutionService, ExecutionServiceServer};
use pb::stream_session_command_response::Item;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

/// Every request the fake received, in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Received {
    pub list: Vec<pb::ListApprovalsRequest>,
    pub resolve: Vec<pb::ResolveApprovalRequest>,
    pub run: Vec<pb::RunSessionCommandRequest>,
    pub stream: Vec<pb::StreamSessionCommandRequest>,
}

#[derive(Clone, Default)]
struct Fake {
    received: Arc<Mutex<Received>>,
}

impl Fake {
    fn record(&self, f: impl FnOnce(&mut Received)) {
        f(&mut self.received.lock().expect("the fake's lock"));
    }
}

pub(crate) fn approval(id: &str, session: &str) -> pb::Approval {
    pb::Approval {
        request_id: id.into(),
        session_id: session.into(),
        tool: "Bash".into(),
        summary: format!("run `ls {id}`"),
        ..Default::default()
    }
}

#[tonic::async_trait]
impl ApprovalService for Fake {
    /// Two pages: `r1` with a token, then `r2`.
    async fn list_approvals(
        &self,
        request: Request<pb::ListApprovalsRequest>,
    ) -> Result<Response<pb::ListApprovalsResponse>, Status> {
        let request = request.into_inner();
        let second = request.page_token == "page-2";
        let session = request.session_id.clone();
        self.record(|r| r.list.push(request));
        Ok(Response::new(if second {
            pb::ListApprovalsResponse {
                approvals: vec![approval("r2", &session)],
                next_page_token: String::new(),
            }
        } else {
            pb::ListApprovalsResponse {
                approvals: vec![approval("r1", &session)],
                next_page_token: "page-2".into(),
            }
        }))
    }

    /// Knows `r1` (pending) and `done` (already answered); `old` plays a server without
    /// approvals.
    async fn resolve_approval(
        &self,
        request: Request<pb::ResolveApprovalRequest>,
    ) -> Result<Response<pb::ResolveApprovalResponse>, Status> {
        let request = request.into_inner();
        let (id, decision) = (request.request_id.clone(), request.decision);
        self.record(|r| r.resolve.push(request));
        match id.as_str() {
            "r1" => Ok(Response::new(pb::ResolveApprovalResponse {
                approval: Some(approval("r1", "s1")),
                decision,
            })),
            "done" => Err(Status::failed_precondition(
                "request done was already resolved",
            )),
            "old" => Err(Status::unimplemented("this server has no approvals")),
            _ => Err(Status::not_found(format!("no approval request {id}"))),
        }
    }
}

type CommandItems =
    Pin<Box<dyn Stream<Item = Result<pb::StreamSessionCommandResponse, Status>> + Send>>;

fn item(item: Item) -> Result<pb::StreamSessionCommandResponse, Status> {
    Ok(pb::StreamSessionCommandResponse { item: Some(item) })
}

fn output(stream: pb::OutputStream, text: &str) -> Item {
    Item::Output(pb::ExecCommandOutputDelta {
        exec_id: "x1".into(),
        stream: stream.into(),
        text: text.into(),
    })
}

#[tonic::async_trait]
impl ExecutionService for Fake {
    type StreamSessionCommandStream = CommandItems;

    async fn run(&self, _: Request<pb::RunRequest>) -> Result<Response<pb::RunResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn submit(
        &self,
        _: Request<pb::SubmitRequest>,
    ) -> Result<Response<pb::SubmitResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn get_execution_status(
        &self,
        _: Request<pb::GetExecutionStatusRequest>,
    ) -> Result<Response<pb::GetExecutionStatusResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn cancel_execution(
        &self,
        _: Request<pb::CancelExecutionRequest>,
    ) -> Result<Response<pb::CancelExecutionResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }

    async fn run_session_command(
        &self,
        request: Request<pb::RunSessionCommandRequest>,
    ) -> Result<Response<pb::RunSessionCommandResponse>, Status> {
        self.record(|r| r.run.push(request.into_inner()));
        Ok(Response::new(pb::RunSessionCommandResponse {
            exec_id: "x1".into(),
            exit_code: 0,
            stdout: "ok\n".into(),
            ..Default::default()
        }))
    }

    /// Output on both streams, then exit 3; `hang` ends the stream without an end.
    async fn stream_session_command(
        &self,
        request: Request<pb::StreamSessionCommandRequest>,
    ) -> Result<Response<CommandItems>, Status> {
        let request = request.into_inner();
        let hang = request.argv.first().is_some_and(|p| p == "hang");
        let argv = request.argv.clone();
        self.record(|r| r.stream.push(request));
        let mut items = vec![
            item(Item::Begin(pb::ExecCommandBegin {
                exec_id: "x1".into(),
                argv,
                ..Default::default()
            })),
            item(output(pb::OutputStream::Stdout, "building\n")),
            item(output(pb::OutputStream::Stderr, "warning: slow")),
        ];
        if !hang {
            items.push(item(Item::End(pb::ExecCommandEnd {
                exec_id: "x1".into(),
                exit_code: 3,
                duration_ms: 12,
                ..Default::default()
            })));
        }
        Ok(Response::new(Box::pin(futures::stream::iter(items))))
    }
}

/// A running fake: its URL, and what it received so far.
pub(crate) struct FakeServer {
    pub url: String,
    received: Arc<Mutex<Received>>,
}

impl FakeServer {
    pub async fn start() -> Self {
        let fake = Fake::default();
        let received = fake.received.clone();
        let incoming =
            TcpIncoming::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).expect("a loopback port");
        let address = incoming.local_addr().expect("the bound address");
        let router = tonic::transport::Server::builder()
            .add_service(ApprovalServiceServer::new(fake.clone()))
            .add_service(ExecutionServiceServer::new(fake));
        tokio::spawn(router.serve_with_incoming(incoming));
        Self {
            url: format!("http://{address}"),
            received,
        }
    }

    pub fn received(&self) -> Received {
        self.received.lock().expect("the fake's lock").clone()
    }
}

/// Runs the CLI in-process; returns (exit code, stdout, stderr).
pub(crate) async fn odyssey(args: &[&str]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let args = args.iter().map(|a| (*a).to_owned()).collect();
    let code = crate::run_cli(args, &mut out, &mut err).await;
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}
