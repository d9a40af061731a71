"""Mosquitto plugin that binds client ids to logins: no session takeover by another identity.

Mosquitto takes over the session of a connected client id as soon as a new CONNECT with
that id is *authenticated*, whoever logs in. With only ``password_file`` and ``acl_file``,
device ``d0000``'s valid login could therefore connect as ``{run}-collector`` and knock the
collector off the broker, again and again. Mosquitto has no setting that fits the run's
many connections per login (a device's stream, secure-sum and LPEA agents; the collector's
persistent session next to its fan-in, secure-sum and closing connections; a gateway's
shards):

- ``use_username_as_clientid`` replaces the client id by the username, so every second
  connection of one login would take the first one over;
- the dynamic-security plugin binds at most one client id to a username, so every
  connection would need an account of its own and its own ACL (fan-in ``-in-N`` and
  secure-sum session ids are open-ended), and ``%u`` device patterns would no longer work.

So ``mosquitto-config`` builds this small plugin (Mosquitto's plugin API version 5,
Mosquitto >= 2.0) and loads it before the password file: on every CONNECT its
``MOSQ_EVT_BASIC_AUTH`` callback refuses (CONNACK "not authorised") a client id that does
not belong to the username, by the rule of ``AccessPolicy.client_ids_ok``, and otherwise
defers, so that the password file still decides the password and the ACL file the rights.
Mosquitto checks credentials before it touches an existing session, so a refused CONNECT
changes nothing (like ``_ClosingBroker`` in ``broker/embedded.py``).

The rule comes from ``broker/auth.py`` through ``plugin_opt_*`` lines (run id, service
names, admin name, device client-id suffixes); the plugin refuses to start without a run.
The C source has no header dependency (it declares the few broker functions it calls, whose
ABI is stable across Mosquitto 2.x), so a C compiler is all a build needs (``$CC``, else
``cc``, ``gcc`` or ``clang``). ``LDPFLEET_MOSQUITTO_PLUGIN`` names a prebuilt copy instead
(a broker host without a compiler: build it elsewhere with ``build_plugin``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ldpfleet.broker.auth import ADMIN, DEVICE_CLIENT_SUFFIXES, SERVICES, AuthError

PLUGIN_FILE = "ldpfleet_clientid.so"
PLUGIN_ENV = "LDPFLEET_MOSQUITTO_PLUGIN"  # path of a prebuilt plugin (no compiler needed)

PLUGIN_SOURCE = r"""
/* ldpfleet: bind MQTT client ids to usernames in Mosquitto 2.x (generated from
 * ldpfleet/broker/mosquitto_plugin.py; see docs/reliability.md). Plugin API version 5. */
#include <stdlib.h>
#include <string.h>

struct mosquitto;
typedef struct mosquitto_plugin_id_t mosquitto_plugin_id_t;
struct mosquitto_opt { char *key; char *value; };
struct mosquitto_evt_basic_auth {
    void *future; struct mosquitto *client; char *username; char *password; void *future2[4];
};
typedef int (*MOSQ_FUNC_generic_callback)(int, void *, void *);
int mosquitto_callback_register(mosquitto_plugin_id_t *, int, MOSQ_FUNC_generic_callback,
                                const void *, void *);
int mosquitto_callback_unregister(mosquitto_plugin_id_t *, int, MOSQ_FUNC_generic_callback,
                                  const void *);
const char *mosquitto_client_id(const struct mosquitto *);
void mosquitto_log_printf(int level, const char *fmt, ...);

#define EVT_BASIC_AUTH 3
#define ERR_SUCCESS 0
#define ERR_NOMEM 1
#define ERR_INVAL 3
#define ERR_AUTH 11
#define ERR_PLUGIN_DEFER 17
#define LOG_ERR (1 << 3)
#define LOG_NOTICE (1 << 1)
#define MAX_NAMES 32
#define MAX_IDENT 64

static mosquitto_plugin_id_t *plugin_id;
static char *run_id, *admin_name;
static char *services[MAX_NAMES], *suffixes[MAX_NAMES];
static int n_services, n_suffixes;

static int ident(const char *s) { /* [A-Za-z0-9_.-]{1,64} */
    size_t n = strlen(s);
    if (n < 1 || n > MAX_IDENT) return 0;
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
              || c == '_' || c == '.' || c == '-')) return 0;
    }
    return 1;
}

static int split(const char *value, char **out) { /* space-separated names */
    int n = 0;
    char *copy = strdup(value), *save = NULL, *word;
    if (!copy) return -1;
    for (word = strtok_r(copy, " \t", &save); word; word = strtok_r(NULL, " \t", &save)) {
        if (n == MAX_NAMES || !(out[n] = strdup(word))) { free(copy); return -1; }
        n++;
    }
    free(copy);
    return n;
}

/* auth.bulk_gateway_number: "gateway-g" then 0 or 1-9 digits without a leading zero. */
static int bulk_gateway_name(const char *s) {
    const char *digits = s + 9;
    size_t count = 0;
    if (strncmp(s, "gateway-g", 9) != 0) return 0;
    while (digits[count] >= '0' && digits[count] <= '9') count++;
    if (count == 0 || count > 9 || digits[count] != '\0') return 0;
    return count == 1 || digits[0] != '0';
}

/* AccessPolicy.client_ids_ok: {run}-{user}[suffix] for a device, {run}-{service}[-*] for a
 * service, exactly {run}-gateway-g{g} for bulk gateway g (no other login may use it), any
 * {run}-* for admin; what follows "{run}-" must be an identifier. */
static int belongs(const char *user, const char *client_id) {
    size_t run_len = strlen(run_id), user_len;
    const char *rest, *tail;
    int i;
    if (!user || !client_id) return 0;
    if (strncmp(client_id, run_id, run_len) != 0 || client_id[run_len] != '-') return 0;
    rest = client_id + run_len + 1;
    if (!ident(rest)) return 0;
    if (admin_name && strcmp(user, admin_name) == 0) return 1;
    if (bulk_gateway_name(user) || bulk_gateway_name(rest)) return strcmp(rest, user) == 0;
    user_len = strlen(user);
    if (strncmp(rest, user, user_len) != 0) return 0;
    tail = rest + user_len;
    for (i = 0; i < n_services; i++) {
        if (strcmp(user, services[i]) == 0) return tail[0] == '\0' || tail[0] == '-';
    }
    if (tail[0] == '\0') return 1;
    for (i = 0; i < n_suffixes; i++) {
        if (strcmp(tail, suffixes[i]) == 0) return 1;
    }
    return 0;
}

static int on_basic_auth(int event, void *event_data, void *userdata) {
    struct mosquitto_evt_basic_auth *ed = event_data;
    const char *client_id = mosquitto_client_id(ed->client);
    (void)event; (void)userdata;
    if (belongs(ed->username, client_id)) return ERR_PLUGIN_DEFER; /* password file decides */
    mosquitto_log_printf(LOG_NOTICE, "ldpfleet: refused client id %s for user %s",
                         client_id ? client_id : "(none)", ed->username ? ed->username : "(none)");
    return ERR_AUTH;
}

int mosquitto_plugin_version(int count, const int *versions) {
    int i;
    for (i = 0; i < count; i++) if (versions[i] == 5) return 5;
    return -1;
}

int mosquitto_plugin_init(mosquitto_plugin_id_t *identifier, void **userdata,
                          struct mosquitto_opt *options, int option_count) {
    int i;
    (void)userdata;
    for (i = 0; i < option_count; i++) {
        const char *key = options[i].key, *value = options[i].value;
        char **text = NULL;
        if (!strcmp(key, "run")) text = &run_id;
        else if (!strcmp(key, "admin")) text = &admin_name;
        else if (!strcmp(key, "services")) n_services = split(value, services);
        else if (!strcmp(key, "device_suffixes")) n_suffixes = split(value, suffixes);
        if (text) {
            free(*text);
            if (!(*text = strdup(value))) return ERR_NOMEM;
        }
        if (n_services < 0 || n_suffixes < 0) return ERR_NOMEM;
    }
    if (!run_id || !ident(run_id)) {
        mosquitto_log_printf(LOG_ERR, "ldpfleet: plugin_opt_run (a run id) missing or invalid");
        return ERR_INVAL;
    }
    plugin_id = identifier;
    return mosquitto_callback_register(identifier, EVT_BASIC_AUTH, on_basic_auth, NULL, NULL);
}

int mosquitto_plugin_cleanup(void *userdata, struct mosquitto_opt *options, int option_count) {
    int i;
    (void)userdata; (void)options; (void)option_count;
    if (plugin_id) mosquitto_callback_unregister(plugin_id, EVT_BASIC_AUTH, on_basic_auth, NULL);
    for (i = 0; i < n_services; i++) free(services[i]);
    for (i = 0; i < n_suffixes; i++) free(suffixes[i]);
    free(run_id); free(admin_name);
    run_id = admin_name = NULL; plugin_id = NULL; n_services = n_suffixes = 0;
    return ERR_SUCCESS;
}
"""


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and (found := shutil.which(name)):
            return found
    return None


def build_plugin(directory: str | Path) -> Path:
    """The plugin for ``mosquitto.conf``: ``$LDPFLEET_MOSQUITTO_PLUGIN`` if set, else
    ``directory/ldpfleet_clientid.so`` compiled now (kept if already built from this
    source). ``AuthError`` says what is missing."""
    prebuilt = os.environ.get(PLUGIN_ENV)
    if prebuilt:
        path = Path(prebuilt).resolve()
        if not path.is_file():
            raise AuthError(f"{PLUGIN_ENV}={prebuilt}: no such plugin file")
        return path
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / PLUGIN_FILE
    stamp = directory / f"{PLUGIN_FILE}.sha256"
    digest = hashlib.sha256(PLUGIN_SOURCE.encode()).hexdigest()
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
        return target
    compiler = _compiler()
    if compiler is None:
        raise AuthError(
            "binding client ids to logins on Mosquitto needs a C compiler to build "
            f"{PLUGIN_FILE} (apt-get install gcc), or {PLUGIN_ENV}=PATH of one built "
            "elsewhere (ldpfleet.broker.mosquitto_plugin.build_plugin)"
        )
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        source = Path(scratch) / "ldpfleet_clientid.c"
        source.write_text(PLUGIN_SOURCE)
        built = Path(scratch) / PLUGIN_FILE
        command = [compiler, "-shared", "-fPIC", "-O2", "-Wall", "-o", str(built), str(source)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not built.is_file():
            raise AuthError(f"building {PLUGIN_FILE} failed: {done.stderr.strip()[-2000:]}")
        built.chmod(0o644)
        # a rename, never a rewrite: a running Mosquitto may have the old copy mapped
        os.replace(built, target)
    stamp.write_text(digest + "\n")
    return target


def plugin_conf_lines(plugin: Path, run: str) -> list[str]:
    """The ``mosquitto.conf`` lines that load ``plugin`` for ``run`` (before the password
    file: Mosquitto calls plugins' callbacks first, then ``password_file``)."""
    return [
        f"plugin {Path(plugin).resolve()}",
        f"plugin_opt_run {run}",
        f"plugin_opt_services {' '.join(SERVICES)}",
        f"plugin_opt_admin {ADMIN}",
        f"plugin_opt_device_suffixes {' '.join(s for s in DEVICE_CLIENT_SUFFIXES if s)}",
    ]
