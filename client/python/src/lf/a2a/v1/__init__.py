"""Generated from proto/lf/a2a/v1 (package lf.a2a.v1, A2A v1.0). Do not edit."""
