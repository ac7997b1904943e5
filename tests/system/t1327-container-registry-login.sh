#!/bin/bash
# t1327-container-registry-login: a private registry (docs/containers.md, "Private registries").
# The registry (Debian's docker-registry) asks for a login (htpasswd). A job of gpool-user's
# with no login on the node fails with a reason that says so; once gpool-user has one in
# ~/.config/containers/auth.json the job runs in the image. The image is then on the node, and
# root has a login of its own in /run/containers/0/auth.json, yet gpool-other's job with the
# same name fails: without a login, with a link to gpool-user's file
# (read as gpool-other: permission denied) and with a wrong password; the node fetches nothing
# for them. The login reaches neither the scheduler nor the node's pulled directory.
# timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-container.sh"
ctr_need registry
ctr_image_build || skip_all "no test image: $CTR_WHY"
REG=$(slot_addr 1):5000
IMG=$REG/team/minbase:1
export GPOOL_CLUSTER_STATE_SIZE=1500m
export GPOOL_CLUSTER_CONF_EXTRA="container_insecure_registries = $REG"
test_under_cluster 1 --cpus 4

# alice:s3cret, bcrypt as the registry wants it (libxcrypt through python3's crypt)
python3 -W ignore -c 'import crypt, sys; print("alice:" + crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))' \
	s3cret >"$TEST_DIR/htpasswd" || skip_all "python3 cannot make a bcrypt hash"
reg_start "$REG" "$TEST_DIR/registry" "$TEST_DIR/htpasswd" || { fail "a registry starts" "$CTR_WHY"; done_testing; }
REGLOG=$TEST_DIR/registry/log
out=$(skopeo inspect --raw --tls-verify=false "docker://$IMG" 2>&1)
like "$out" "unauthorized" "the registry refuses an anonymous client"
check "the test image is pushed with alice's login" skopeo copy --insecure-policy --quiet \
	--dest-tls-verify=false --dest-creds alice:s3cret "oci-archive:$CTR_IMAGE" "docker://$IMG"
layer=$(skopeo inspect --raw --tls-verify=false --creds alice:s3cret "docker://$IMG" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"][7:])')

uhome=$(getent passwd "$TEST_USER" | cut -d: -f6)
ohome=$(getent passwd "$OTHER_USER" | cut -d: -f6)
at_cleanup "rm -f '$uhome/.config/containers/auth.json' '$ohome/.config/containers/auth.json'"
# reg_login USER HOME BASE64: USER's auth file, written as USER, mode 0600
reg_login() {
	runuser -u "$1" -- sh -c 'mkdir -p "$1/.config/containers" && umask 077 &&
		printf "{\"auths\":{\"%s\":{\"auth\":\"%s\"}}}\n" "$2" "$3" >"$1/.config/containers/auth.json"' \
		sh "$2" "$REG" "$3"
}
# run_job AS: a job in the private image as AS (as_user or as_other); its id in $jid
run_job() {
	local out
	out=$(cd "$WORK" && "$1" timeout 240 gsub --wait --container "$IMG" -- cat /etc/gpool-test-image 2>&1)
	jid=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' <<<"$out")
}

run_job as_user
is "$(job_state "$jid")" FAILED "gpool-user's job fails while gpool-user has no login on the node"
like "$(job_field "$jid" reason)" "the registry refused an anonymous pull .*unauthorized.*the owner has no login for it on this node" \
	"its reason says the registry wants a login ($(job_field "$jid" reason))"

reg_login "$TEST_USER" "$uhome" "$(printf alice:s3cret | base64)"
run_job as_user
is "$(job_state "$jid")" COMPLETED "with a login in ~/.config/containers/auth.json the job runs"
like "$(as_user glogs "$jid" 2>&1)" "gpool minbase test image" "in the private image"
fetched=$(reg_blob_gets "$REGLOG" "$layer")
is "$fetched" 1 "the node fetched the image's layer once"
unlike "$(gstat --json -a -j "$jid" 2>&1)" "YWxpY2U|s3cret" "the login is not in the job's record"
unlike "$(on_host h1 ls "$CLUSTER_DIR/node/state/images/pulled/tmp")" "auth" "nor left in the node's pull directory"

# gpool-other, the image on the node now; and root has a login of its own for the registry
# where skopeo and podman keep root's (an admin's `podman login`): no one's job may pull with it
rootauth=/run/containers/0/auth.json
if [ ! -e "$rootauth" ]; then
	mkdir -p "$(dirname "$rootauth")"
	printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$REG" "$(printf alice:s3cret | base64)" >"$rootauth"
	chmod 600 "$rootauth"
	at_cleanup "rm -f '$rootauth'"
else
	diag "$rootauth exists already: root's login is not planted"
fi
run_job as_other
is "$(job_state "$jid")" FAILED "gpool-other's job with the image cached on the node fails without a login"
like "$(job_field "$jid" reason)" "refused an anonymous pull" "the registry refused it ($(job_field "$jid" reason))"
runuser -u "$OTHER_USER" -- mkdir -p "$ohome/.config/containers"
runuser -u "$OTHER_USER" -- ln -sf "$uhome/.config/containers/auth.json" "$ohome/.config/containers/auth.json"
run_job as_other
is "$(job_state "$jid")" FAILED "a link to gpool-user's auth file does not give gpool-other the login"
like "$(job_field "$jid" reason)" "cannot read $OTHER_USER's registry logins: Permission denied" \
	"the file is read as gpool-other ($(job_field "$jid" reason))"
runuser -u "$OTHER_USER" -- rm -f "$ohome/.config/containers/auth.json"
reg_login "$OTHER_USER" "$ohome" "$(printf alice:guess | base64)"
run_job as_other
is "$(job_state "$jid")" FAILED "a wrong password fails"
like "$(job_field "$jid" reason)" "refused the job owner's login .*~/.config/containers/auth.json" \
	"the reason names the login used ($(job_field "$jid" reason))"
is "$(reg_blob_gets "$REGLOG" "$layer")" "$fetched" "the node fetched nothing for gpool-other"
done_testing
