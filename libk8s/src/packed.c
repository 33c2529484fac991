/*
 * packed.c - cJSON trees packed into one allocation (see packed.h).
 *
 * Layout of a packed object: a header (size, where metadata.resourceVersion
 * is), then the nodes in document order. A node is a tag byte, its key when
 * it is an object member, then its value:
 *
 *   tag = type (bits 0-3) | key kind << 4 (bits 4-5)
 *   key kinds: none (array elements, the root), a dictionary word (one
 *              byte: its index), inline (the bytes and a NUL)
 *   types: null, false, true; int (zigzag LEB128 varint, for integral
 *          doubles within +-2^53, so the double comes back bit for bit);
 *          double (the 8 bytes as stored); string inline (bytes and NUL;
 *          cJSON strings cannot hold a NUL themselves); string word (one
 *          byte); raw (as a string); array and object (a varint count,
 *          then the children).
 *
 * Packing walks the tree twice, once to size the allocation and once to
 * fill it, so nothing is allocated but the result.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/packed.h"

enum {
	T_NULL, T_FALSE, T_TRUE, T_INT, T_DOUBLE, T_STR, T_WORD, T_ARRAY,
	T_OBJECT, T_RAW,
};
enum { K_NONE = 0, K_WORD = 1, K_INLINE = 2 };

#define MAX_DICT 255

struct k8s_packed {
	uint32_t size;    /* bytes of data[] */
	uint32_t rv;      /* offset of metadata.resourceVersion's bytes in data[] + 1; 0: none */
	unsigned char data[];
};

struct k8s_packer {
	const char *words[MAX_DICT];   /* sorted by strcmp; index = reference */
	char *owned[K8S_PACKER_MAX_WORDS];
	size_t nwords, nowned;
	k8s_object_codec codec;
};

/*
 * Strings that Kubernetes objects of every kind repeat: member names of
 * ObjectMeta, PodSpec, Container, Service, PVC, conditions, and their
 * usual values. Order does not matter here (the packer sorts them).
 */
static const char *const builtin_words[] = {
	"apiVersion", "kind", "metadata", "spec", "status", "items",
	"name", "generateName", "namespace", "uid", "resourceVersion", "generation",
	"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
	"labels", "annotations", "ownerReferences", "finalizers", "managedFields",
	"controller", "blockOwnerDeletion",
	"manager", "operation", "Update", "Apply", "fieldsType", "FieldsV1", "fieldsV1", "time",
	"subresource",
	"conditions", "type", "reason", "message", "lastTransitionTime", "lastProbeTime",
	"lastUpdateTime", "lastHeartbeatTime", "observedGeneration",
	"True", "False", "Unknown", "Ready", "Initialized", "ContainersReady", "PodScheduled",
	"PodReadyToStartContainers",
	"replicas", "selector", "podIPs", "podIP", "ip",
	"containers", "initContainers", "image", "imagePullPolicy", "command", "args", "env",
	"value", "valueFrom", "ports", "containerPort", "hostPort", "protocol", "TCP", "UDP",
	"SCTP", "resources", "limits", "requests", "cpu", "memory", "ephemeral-storage",
	"volumeMounts", "mountPath", "readOnly", "volumes", "readinessProbe", "livenessProbe",
	"startupProbe", "httpGet", "tcpSocket", "exec", "path", "port", "scheme", "HTTP",
	"initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold",
	"failureThreshold", "securityContext", "runAsUser", "runAsNonRoot", "runAsGroup",
	"fsGroup", "readOnlyRootFilesystem", "allowPrivilegeEscalation", "capabilities",
	"drop", "add", "ALL", "restartPolicy", "Always", "Never", "OnFailure",
	"terminationGracePeriodSeconds", "dnsPolicy", "ClusterFirst", "schedulerName",
	"default-scheduler", "serviceAccountName", "serviceAccount", "nodeName",
	"nodeSelector", "tolerations", "affinity", "hostname", "subdomain",
	"terminationMessagePath", "terminationMessagePolicy", "File",
	"/dev/termination-log", "IfNotPresent", "enableServiceLinks", "preemptionPolicy",
	"PreemptLowerPriority", "priority", "clusterIP", "clusterIPs", "None", "ClusterIP",
	"ipFamilies", "IPv4", "IPv6", "ipFamilyPolicy", "SingleStack", "sessionAffinity",
	"internalTrafficPolicy", "Cluster", "targetPort", "publishNotReadyAddresses",
	"loadBalancer", "phase", "Pending", "Running", "Succeeded", "Failed", "hostIP",
	"hostIPs", "startTime", "qosClass", "BestEffort", "Burstable", "Guaranteed",
	"containerStatuses", "state", "running", "startedAt", "restartCount", "started",
	"ready", "imageID", "containerID", "v1", "Pod", "Service", "PersistentVolumeClaim",
	"networking.k8s.io/v1", "NetworkPolicy", "accessModes", "ReadWriteOnce", "storage",
	"storageClassName", "volumeMode", "Filesystem", "persistentVolumeClaim", "claimName",
	"emptyDir", "matchLabels", "matchExpressions", "key", "operator", "values", "In",
	"podSelector", "policyTypes", "Ingress", "Egress", "ingress", "egress", "template",
	"default",
};

static int cmp_word(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int find_word(const k8s_packer *pk, const char *s)
{
	const char *const *hit = bsearch(&s, pk->words, pk->nwords, sizeof(pk->words[0]),
	                                 cmp_word);
	return hit ? (int)(hit - pk->words) : -1;
}

static cJSON *codec_encode(const void *v, void *ud);
static int codec_decode(const cJSON *obj, void **out, void *ud);
static void codec_free(void *v, void *ud);
static const char *codec_rv(const void *v, void *ud);

int k8s_packer_new(k8s_packer **out, const char *const *words, size_t nwords)
{
	if (!out || (nwords && !words) || nwords > K8S_PACKER_MAX_WORDS)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "packer: out is required and at most %d words may be added",
		                     K8S_PACKER_MAX_WORDS);
	for (size_t i = 0; i < nwords; i++)
		if (!words[i] || !*words[i])
			return asb_error_set(ASB_EINVAL, 0, NULL, "packer: word %zu is empty", i);
	*out = NULL;
	k8s_packer *pk = calloc(1, sizeof(*pk));
	if (!pk)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "packer: out of memory");
	size_t nb = sizeof(builtin_words) / sizeof(builtin_words[0]);
	_Static_assert(sizeof(builtin_words) / sizeof(builtin_words[0]) + K8S_PACKER_MAX_WORDS
	               <= MAX_DICT, "the dictionary's references are one byte");
	for (size_t i = 0; i < nb; i++)
		pk->words[pk->nwords++] = builtin_words[i];
	for (size_t i = 0; i < nwords; i++) {
		char *w = strdup(words[i]);
		if (!w) {
			k8s_packer_free(pk);
			return asb_error_set(ASB_ENOMEM, 0, NULL, "packer: out of memory");
		}
		pk->owned[pk->nowned++] = w;
		pk->words[pk->nwords++] = w;
	}
	/* sorted, each word once (a reference is its index) */
	qsort(pk->words, pk->nwords, sizeof(pk->words[0]), cmp_word);
	size_t n = 0;
	for (size_t i = 0; i < pk->nwords; i++)
		if (n == 0 || strcmp(pk->words[n - 1], pk->words[i]) != 0)
			pk->words[n++] = pk->words[i];
	pk->nwords = n;
	pk->codec = (k8s_object_codec){ codec_decode, codec_encode, codec_free, codec_rv, pk };
	*out = pk;
	return 0;
}

void k8s_packer_free(k8s_packer *pk)
{
	if (!pk)
		return;
	for (size_t i = 0; i < pk->nowned; i++)
		free(pk->owned[i]);
	free(pk);
}

/* ---- packing ---- */

typedef struct {
	const k8s_packer *pk;
	unsigned char *buf;   /* NULL while sizing */
	size_t len;
	uint32_t rv;
	bool rv_seen;
	int error;
} writer;

static void put(writer *w, const void *p, size_t n)
{
	if (w->buf)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void put_byte(writer *w, unsigned char b)
{
	put(w, &b, 1);
}

static void put_varint(writer *w, uint64_t v)
{
	do {
		unsigned char b = v & 0x7f;
		v >>= 7;
		put_byte(w, b | (v ? 0x80 : 0));
	} while (v);
}

static void put_cstr(writer *w, const char *s)
{
	put(w, s, strlen(s) + 1);
}

/* Integral doubles that a varint carries exactly (and -0.0 is not one). */
static bool small_integer(double d, int64_t *out)
{
	if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0))
		return false;
	int64_t i = (int64_t)d;
	if ((double)i != d || (i == 0 && signbit(d)))
		return false;
	*out = i;
	return true;
}

/* Where a node is: metadata.resourceVersion is the first "resourceVersion"
 * member of the root's first "metadata" member (as cJSON finds it). */
enum { WHERE_ROOT, WHERE_TOP, WHERE_METADATA, WHERE_IN_METADATA, WHERE_ELSE };

static void pack_node(writer *w, const cJSON *n, bool keyed, int where)
{
	int type, word = -1, kword = -1;
	int64_t ival = 0;
	/* the first "resourceVersion" of metadata is the one cJSON finds; its
	 * string is kept inline, so k8s_packed_resource_version() can point at it */
	bool rv_here = false;
	if (where == WHERE_IN_METADATA && !w->rv_seen && n->string &&
	    strcmp(n->string, "resourceVersion") == 0) {
		w->rv_seen = true;
		rv_here = true;
	}
	switch (n->type & 0xff) {
	case cJSON_NULL: type = T_NULL; break;
	case cJSON_False: type = T_FALSE; break;
	case cJSON_True: type = T_TRUE; break;
	case cJSON_Number: type = small_integer(n->valuedouble, &ival) ? T_INT : T_DOUBLE; break;
	case cJSON_String:
		if (!n->valuestring) {
			w->error = ASB_EINVAL;
			return;
		}
		word = rv_here ? -1 : find_word(w->pk, n->valuestring);
		type = word >= 0 ? T_WORD : T_STR;
		break;
	case cJSON_Raw:
		if (!n->valuestring) {
			w->error = ASB_EINVAL;
			return;
		}
		type = T_RAW;
		break;
	case cJSON_Array: type = T_ARRAY; break;
	case cJSON_Object: type = T_OBJECT; break;
	default:
		w->error = ASB_EINVAL;
		return;
	}
	int kk = K_NONE;
	if (keyed && n->string) {
		kword = find_word(w->pk, n->string);
		kk = kword >= 0 ? K_WORD : K_INLINE;
	}
	put_byte(w, (unsigned char)(type | kk << 4));
	if (kk == K_WORD)
		put_byte(w, (unsigned char)kword);
	else if (kk == K_INLINE)
		put_cstr(w, n->string);
	switch (type) {
	case T_INT:
		put_varint(w, ((uint64_t)ival << 1) ^ (uint64_t)(ival >> 63));
		break;
	case T_DOUBLE:
		put(w, &n->valuedouble, sizeof(double));
		break;
	case T_WORD:
		put_byte(w, (unsigned char)word);
		break;
	case T_STR:
		if (rv_here && w->len < UINT32_MAX)
			w->rv = (uint32_t)w->len + 1;
		/* fall through */
	case T_RAW:
		put_cstr(w, n->valuestring);
		break;
	case T_ARRAY:
	case T_OBJECT: {
		size_t count = 0;
		const cJSON *c;
		for (c = n->child; c; c = c->next)
			count++;
		put_varint(w, count);
		bool first_md = false;
		for (c = n->child; c && !w->error; c = c->next) {
			int cw = WHERE_ELSE;
			if (where == WHERE_ROOT && type == T_OBJECT) {
				cw = WHERE_TOP;
				/* the first "metadata" is the one cJSON finds, object or not */
				if (!first_md && c->string && strcmp(c->string, "metadata") == 0) {
					first_md = true;
					if (cJSON_IsObject(c))
						cw = WHERE_METADATA;
				}
			} else if (where == WHERE_METADATA && type == T_OBJECT) {
				cw = WHERE_IN_METADATA;
			}
			pack_node(w, c, type == T_OBJECT, cw);
		}
		break;
	}
	default:
		break;
	}
}

int k8s_packer_pack(const k8s_packer *pk, const cJSON *obj, k8s_packed **out)
{
	if (out)
		*out = NULL;
	if (!pk || !obj || !out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "packer: packer, object and out are required");
	writer w = { .pk = pk };
	pack_node(&w, obj, false, WHERE_ROOT);
	if (w.error)
		return asb_error_set(w.error, 0, NULL, "packer: the object holds a node of no JSON type");
	if (w.len > INT32_MAX)
		return asb_error_set(ASB_ETOOLARGE, 0, NULL, "packer: object of %zu bytes packed", w.len);
	k8s_packed *p = malloc(sizeof(*p) + w.len);
	if (!p)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "packer: out of memory (%zu bytes)", w.len);
	size_t sized = w.len;
	w.buf = p->data;
	w.len = 0;
	w.rv = 0;
	w.rv_seen = false;
	pack_node(&w, obj, false, WHERE_ROOT);
	p->size = (uint32_t)sized;
	p->rv = w.rv;
	*out = p;
	return 0;
}

/* ---- unpacking ---- */

typedef struct {
	const k8s_packer *pk;
	const unsigned char *p, *end;
} reader;

static bool get_byte(reader *r, unsigned char *b)
{
	if (r->p >= r->end)
		return false;
	*b = *r->p++;
	return true;
}

static bool get_varint(reader *r, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		unsigned char b;
		if (!get_byte(r, &b))
			return false;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static const char *get_cstr(reader *r)
{
	const unsigned char *nul = memchr(r->p, 0, (size_t)(r->end - r->p));
	if (!nul)
		return NULL;
	const char *s = (const char *)r->p;
	r->p = nul + 1;
	return s;
}

static const char *get_word(reader *r)
{
	unsigned char i;
	if (!get_byte(r, &i) || i >= r->pk->nwords)
		return NULL;
	return r->pk->words[i];
}

/* Reads a node's tag and key (NULL: none); false when malformed. */
static bool read_head(reader *r, unsigned char *tag, const char **key)
{
	*key = NULL;
	if (!get_byte(r, tag))
		return false;
	switch (*tag >> 4) {
	case K_NONE: return true;
	case K_WORD: return (*key = get_word(r)) != NULL;
	case K_INLINE: return (*key = get_cstr(r)) != NULL;
	default: return false;
	}
}

static bool get_double(reader *r, double *d)
{
	if ((size_t)(r->end - r->p) < sizeof(*d))
		return false;
	memcpy(d, r->p, sizeof(*d));
	r->p += sizeof(*d);
	return true;
}

/* One node (and its children) into `parent` (NULL: returned as the root). */
static cJSON *unpack_node(reader *r, cJSON *parent, int depth)
{
	unsigned char tag;
	const char *key;
	if (depth > CJSON_NESTING_LIMIT || !read_head(r, &tag, &key))
		return NULL;
	cJSON *n = NULL;
	uint64_t u = 0;
	const char *s;
	switch (tag & 0x0f) {
	case T_NULL: n = cJSON_CreateNull(); break;
	case T_FALSE: n = cJSON_CreateFalse(); break;
	case T_TRUE: n = cJSON_CreateTrue(); break;
	case T_INT:
		if (!get_varint(r, &u))
			return NULL;
		n = cJSON_CreateNumber((double)(int64_t)((u >> 1) ^ (~(u & 1) + 1)));
		break;
	case T_DOUBLE: {
		double d;
		if (!get_double(r, &d))
			return NULL;
		n = cJSON_CreateNumber(d);
		break;
	}
	case T_STR:
	case T_RAW:
		if (!(s = get_cstr(r)))
			return NULL;
		n = (tag & 0x0f) == T_STR ? cJSON_CreateString(s) : cJSON_CreateRaw(s);
		break;
	case T_WORD:
		if (!(s = get_word(r)))
			return NULL;
		n = cJSON_CreateString(s);
		break;
	case T_ARRAY:
	case T_OBJECT:
		if (!get_varint(r, &u) || u > (uint64_t)(r->end - r->p))
			return NULL;
		n = (tag & 0x0f) == T_ARRAY ? cJSON_CreateArray() : cJSON_CreateObject();
		for (uint64_t i = 0; n && i < u; i++) {
			if (!unpack_node(r, n, depth + 1)) {
				cJSON_Delete(n);
				n = NULL;
			}
		}
		break;
	default:
		return NULL;
	}
	if (!n || !parent)
		return n;
	/* cJSON_AddItemToObject copies the key; into an array, or for a member
	 * that had none, the node is added as it came */
	bool ok = key ? cJSON_AddItemToObject(parent, key, n) : cJSON_AddItemToArray(parent, n);
	if (!ok) {
		cJSON_Delete(n);
		return NULL;
	}
	return n;
}

/* Skips the value of a node whose head was read (children and all). */
static bool skip_value(reader *r, unsigned char tag, int depth)
{
	uint64_t u;
	switch (tag & 0x0f) {
	case T_NULL: case T_FALSE: case T_TRUE: return true;
	case T_INT: return get_varint(r, &u);
	case T_DOUBLE: {
		double d;
		return get_double(r, &d);
	}
	case T_STR: case T_RAW: return get_cstr(r) != NULL;
	case T_WORD: return get_word(r) != NULL;
	case T_ARRAY: case T_OBJECT:
		if (depth > CJSON_NESTING_LIMIT || !get_varint(r, &u))
			return false;
		for (uint64_t i = 0; i < u; i++) {
			unsigned char t;
			const char *k;
			if (!read_head(r, &t, &k) || !skip_value(r, t, depth + 1))
				return false;
		}
		return true;
	default: return false;
	}
}

cJSON *k8s_packer_unpack_at(const k8s_packer *pk, const k8s_packed *p, const char *path)
{
	if (!pk || !p || !path)
		return NULL;
	reader r = { pk, p->data, p->data + p->size };
	const char *seg = path;
	while (*seg) {
		const char *dot = strchr(seg, '.');
		size_t n = dot ? (size_t)(dot - seg) : strlen(seg);
		unsigned char tag;
		const char *key;
		uint64_t count;
		/* the current node must be an object: find its first member `seg` */
		if (!read_head(&r, &tag, &key) || (tag & 0x0f) != T_OBJECT || !get_varint(&r, &count))
			return NULL;
		bool found = false;
		for (uint64_t i = 0; i < count && !found; i++) {
			const unsigned char *member = r.p;
			if (!read_head(&r, &tag, &key))
				return NULL;
			if (key && strncmp(key, seg, n) == 0 && key[n] == '\0') {
				r.p = member;
				found = true;
			} else if (!skip_value(&r, tag, 1)) {
				return NULL;
			}
		}
		if (!found)
			return NULL;
		seg += n;
		if (*seg == '.')
			seg++;
	}
	/* r.p is at the node's head: unpacked alone, it comes without its key */
	return unpack_node(&r, NULL, 0);
}

cJSON *k8s_packer_unpack(const k8s_packer *pk, const k8s_packed *p)
{
	if (!pk || !p)
		return NULL;
	reader r = { pk, p->data, p->data + p->size };
	return unpack_node(&r, NULL, 0);
}

const char *k8s_packed_resource_version(const k8s_packed *p)
{
	return p && p->rv ? (const char *)p->data + p->rv - 1 : NULL;
}

size_t k8s_packed_size(const k8s_packed *p)
{
	return p ? sizeof(*p) + p->size : 0;
}

void k8s_packed_free(k8s_packed *p)
{
	free(p);
}

/* ---- the informer codec ---- */

static int codec_decode(const cJSON *obj, void **out, void *ud)
{
	k8s_packed *p = NULL;
	int rc = k8s_packer_pack(ud, obj, &p);
	*out = p;
	return rc;
}

static cJSON *codec_encode(const void *v, void *ud)
{
	return k8s_packer_unpack(ud, v);
}

static void codec_free(void *v, void *ud)
{
	(void)ud;
	k8s_packed_free(v);
}

static const char *codec_rv(const void *v, void *ud)
{
	(void)ud;
	return k8s_packed_resource_version(v);
}

const k8s_object_codec *k8s_packer_codec(const k8s_packer *pk)
{
	return pk ? &pk->codec : NULL;
}
