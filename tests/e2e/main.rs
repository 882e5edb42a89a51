//! End-to-end tests: a real server on 127.0.0.1:0, real files, the generated clients.
//! One test binary, so the workspace links it once.

mod support;

mod a2a;
mod a2a_clients;
mod a2a_delegate;
mod a2a_jsonrpc;
mod a2a_push;
mod a2a_rest;
mod a2a_sdk;
mod a2a_tasks;
mod approval_display;
mod approval_watch;
mod approvals;
mod bad_input;
mod bundles;
mod cli;
mod commands;
mod config;
mod console;
mod docs;
mod egress;
mod event_size;
mod forks;
mod gateway;
mod grpc_web;
mod grpcurl;
mod hosts;
mod hub;
mod input;
mod mcp;
mod mcp_serve;
mod memory;
mod model_json;
mod operations;
mod overlays;
mod prompt;
mod provider_features;
mod providers;
mod recovery;
mod sdk;
mod sessions;
mod subagents;
mod surface;
mod tls_web;
mod turns;
