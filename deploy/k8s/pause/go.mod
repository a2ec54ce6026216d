module restash.dev/pause

go 1.22
