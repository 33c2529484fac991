/*
 * resource.c - the well-known resources and REST paths.
 *
 * Path layout (https://kubernetes.io/docs/reference/using-api/api-concepts/):
 *   core group:   /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUBRESOURCE]]
 *   named group:  /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE[/NAME[/SUB]]
 * Every segment is percent-encoded, so that a name can never add a segment
 * or a query; "." and ".." are refused because URL normalisation (libcurl
 * does it) would turn them into a different path.
 */
#include <limits.h>
#include <string.h>
#include "k8s/resource.h"

const k8s_resource k8s_resource_pods =
	{ "", "v1", "pods", "Pod", true };
const k8s_resource k8s_resource_services =
	{ "", "v1", "services", "Service", true };
const k8s_resource k8s_resource_pvcs =
	{ "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true };
const k8s_resource k8s_resource_namespaces =
	{ "", "v1", "namespaces", "Namespace", false };
const k8s_resource k8s_resource_events =
	{ "", "v1", "events", "Event", true };
const k8s_resource k8s_resource_leases =
	{ "coordination.k8s.io", "v1", "leases", "Lease", true };
const k8s_resource k8s_resource_crds =
	{ "apiextensions.k8s.io", "v1", "customresourcedefinitions",
	  "CustomResourceDefinition", false };

/* Output cursor: writes stop at the capacity, and `len` keeps counting. */
typedef struct {
	char *buf;
	size_t cap;
	size_t len;
} cursor;

static void put(cursor *c, char ch)
{
	if (c->len + 1 < c->cap)
		c->buf[c->len] = ch;
	c->len++;
}

/* RFC 3986 unreserved characters pass; everything else becomes %XX. */
static void put_segment(cursor *c, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	put(c, '/');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
		    ch == '_' || ch == '~') {
			put(c, (char)ch);
		} else {
			put(c, '%');
			put(c, hex[ch >> 4]);
			put(c, hex[ch & 15]);
		}
	}
}

static void put_literal(cursor *c, const char *s)
{
	for (; *s; s++)
		put(c, *s);
}

/* A segment must be non-empty and not a dot segment. */
static int bad_segment(const char *s)
{
	return !s || !s[0] || strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

static int invalid(const char *what, const char *value)
{
	asb_error_set(ASB_EINVAL, 0, NULL, "resource path: invalid %s \"%s\"",
	              what, value ? value : "(null)");
	return -1;
}

int k8s_resource_path(char *buf, size_t cap, const k8s_resource *r,
                      const char *ns, const char *name,
                      const char *subresource)
{
	cursor c = { buf, cap, 0 };

	if (buf && cap > 0)
		buf[0] = '\0';  /* callers may print it even on failure */
	if (!buf || cap == 0 || !r)
		return invalid("argument", NULL);
	if (bad_segment(r->version) || bad_segment(r->resource) || !r->group ||
	    (r->group[0] && bad_segment(r->group)))
		return invalid("resource", r->resource);
	if (name && bad_segment(name))
		return invalid("name", name);
	if (subresource && (!name || bad_segment(subresource)))
		return invalid("subresource", subresource);
	/* A namespaced object needs its namespace; only a collection may span
	 * all namespaces. */
	bool in_ns = r->namespaced && ns && ns[0];
	if (r->namespaced && name && !in_ns)
		return invalid("namespace for a namespaced object", ns);
	if (in_ns && bad_segment(ns))
		return invalid("namespace", ns);

	if (r->group[0]) {
		put_literal(&c, "/apis");
		put_segment(&c, r->group);
	} else {
		put_literal(&c, "/api");
	}
	put_segment(&c, r->version);
	if (in_ns) {
		put_literal(&c, "/namespaces");
		put_segment(&c, ns);
	}
	put_segment(&c, r->resource);
	if (name)
		put_segment(&c, name);
	if (subresource)
		put_segment(&c, subresource);

	if (c.len >= cap || c.len > INT_MAX) {
		buf[0] = '\0';
		asb_error_set(ASB_EINVAL, 0, NULL,
		              "resource path: %zu bytes needed, buffer holds %zu",
		              c.len + 1, cap);
		return -1;
	}
	buf[c.len] = '\0';
	return (int)c.len;
}
