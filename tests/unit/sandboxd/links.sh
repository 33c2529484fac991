#!/bin/sh
# Checks that sandboxd links none of the Kubernetes client's libraries:
# it serves HTTP through libhttpd and needs neither libk8s nor libcurl,
# libyaml or what libcurl pulls in (Kerberos, LDAP, GnuTLS).
# Usage: links.sh PATH-TO-SANDBOXD
set -eu
bin=$1
libs=$(ldd "$bin") || { echo "links.sh: ldd $bin failed" >&2; exit 1; }
echo "$libs"
if echo "$libs" | grep -E 'libk8s|libsandbox|libwarmpool|libcurl|libyaml|libkrb5|libldap|libgnutls' >&2; then
  echo "links.sh: $bin links a library it must not (above)" >&2
  exit 1
fi
