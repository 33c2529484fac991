//go:build tools

// Package tools records the helm main package that tools/install-deps builds
// from this module, so that `go mod tidy` keeps its dependencies in go.mod and
// go.sum. The build tag keeps this file out of every build.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
