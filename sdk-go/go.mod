module agent-sandbox/sdk-go

go 1.26
