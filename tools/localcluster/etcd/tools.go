//go:build tools

// Package tools records the etcd main package that tools/local-cluster builds
// from this module, so that `go mod tidy` keeps its dependencies in go.mod and
// go.sum. The build tag keeps this file out of every build.
package tools

import _ "go.etcd.io/etcd/server/v3"
