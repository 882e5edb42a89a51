"""Generated from proto/odyssey/v1 (package odyssey.v1). Do not edit."""
