# In your module's folder (go mod init ...), with a checkout of Odyssey at $ODYSSEY:
go mod edit -replace github.com/odyssey-ai/odyssey/client/go="$ODYSSEY/client/go"
go mod tidy    # requires the module at v0.0.0-00010101000000-000000000000, the replace's version
