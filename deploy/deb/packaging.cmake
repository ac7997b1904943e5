# Debian packages (`make deb`): CPack's DEB generator, one package per component:
#   gpool-scheduler  gschedd, gpool-ca, its dashboard, gschedd.service, the gpool service account
#   gpool-worker     gworkerd, gstepd, gcheck, gworkerd.service, the state and scratch dirs, and
#                    what jobs run on a node: gpool-launch and gpool-rsh (gsub --mpi=mpirun, on
#                    the task's PATH), gtrain, gserve
#   gpool-client     the commands and /etc/gpool/gpool.conf (every key, commented)
#   gpool-gateway    ggated, ggated.service, /etc/default/ggated, the ggated service account
#   gpool-cuda       the kernels' CUDA module (only when nvcc built it)
#   gpool-hip        the kernels' HIP module (only when hipcc built it)
#   libgcomm0        libgcomm.so.0, for programs built against it
#   gpool-dev        libgcomm's and the kernels' headers, libgpool-kernels.a, the .pc files
# Programs land where deploy/systemd's units run them (/usr/sbin, /usr/bin). Every file that
# `cmake --install` installs belongs to one of these (tests/deb/lintian.sh checks it).
set(GPOOL_DEB_DIR ${CMAKE_SOURCE_DIR}/deploy/deb)

add_executable(gpool-conf-example ${CMAKE_SOURCE_DIR}/tools/conf-example/conf_example.c)
target_link_libraries(gpool-conf-example gpool_common)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/gpool.conf.example
  COMMAND gpool-conf-example > ${CMAKE_BINARY_DIR}/gpool.conf.example
  DEPENDS gpool-conf-example)
# the changelog of each (native) package as changelog.gz, compressed reproducibly
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/deb
  COMMAND gzip -9nc ${GPOOL_DEB_DIR}/changelog > ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz
  DEPENDS ${GPOOL_DEB_DIR}/changelog)
add_custom_target(gpool-deb-files ALL DEPENDS ${CMAKE_BINARY_DIR}/gpool.conf.example
  ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz)

# the components built in this tree: the card modules only where their compiler was found
set(GPOOL_DEB_COMPONENTS scheduler worker client gateway libgcomm dev)
if(TARGET gpool-kernels-cuda)
  list(APPEND GPOOL_DEB_COMPONENTS cuda)
endif()
if(TARGET gpool-kernels-hip)
  list(APPEND GPOOL_DEB_COMPONENTS hip)
endif()
set(GPOOL_DEB_PACKAGE_scheduler gpool-scheduler)
set(GPOOL_DEB_PACKAGE_worker gpool-worker)
set(GPOOL_DEB_PACKAGE_client gpool-client)
set(GPOOL_DEB_PACKAGE_gateway gpool-gateway)
set(GPOOL_DEB_PACKAGE_libgcomm libgcomm0)
set(GPOOL_DEB_PACKAGE_dev gpool-dev)
set(GPOOL_DEB_PACKAGE_cuda gpool-cuda)
set(GPOOL_DEB_PACKAGE_hip gpool-hip)
# component=package, one a line, for tests/deb/lintian.sh
set(GPOOL_DEB_LIST "")
foreach(c IN LISTS GPOOL_DEB_COMPONENTS)
  string(APPEND GPOOL_DEB_LIST "${c}=${GPOOL_DEB_PACKAGE_${c}}\n")
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/deb/packages.txt "${GPOOL_DEB_LIST}")

# ---- scheduler ----
install(TARGETS gschedd DESTINATION sbin COMPONENT scheduler)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/scheduler/web/ DESTINATION share/gpool/web
  COMPONENT scheduler)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/gschedd.service
  DESTINATION lib/systemd/system COMPONENT scheduler)
# the pool's own CA for HTTPS on the REST API (docs/commands/gpool-ca.md)
install(PROGRAMS ${CMAKE_SOURCE_DIR}/deploy/gpool-ca DESTINATION sbin COMPONENT scheduler)
# ---- worker: the agent, its supervisor, and what jobs run on the node ----
install(TARGETS gworkerd gstepd gpool-image DESTINATION sbin COMPONENT worker)
install(TARGETS gcheck gpool-launch gpool-rsh gtrain DESTINATION bin COMPONENT worker)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/gworkerd.service
  DESTINATION lib/systemd/system COMPONENT worker)
# ---- client ----
install(TARGETS gsub gstat gcancel gnodes glogs gpool gacct DESTINATION bin COMPONENT client)
# gpool join-token, join, leave: gpool runs it from its own directory (cli/join/)
install(TARGETS gpool-join DESTINATION bin COMPONENT client)
install(FILES ${CMAKE_BINARY_DIR}/gpool.conf.example DESTINATION /etc/gpool
  RENAME gpool.conf COMPONENT client)
# bash completion: one script for every command (deploy/completion/gpool.bash), under each
# client command's name, as bash-completion loads it on a command's first <TAB>
foreach(cmd gsub gstat gcancel gnodes glogs gpool gacct)
  install(FILES ${CMAKE_SOURCE_DIR}/deploy/completion/gpool.bash
    DESTINATION share/bash-completion/completions RENAME ${cmd} COMPONENT client)
endforeach()
# ---- gateway (ggated itself: gateway/CMakeLists.txt) ----
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/ggated.service
  DESTINATION lib/systemd/system COMPONENT gateway)
install(FILES ${GPOOL_DEB_DIR}/gateway/ggated.default DESTINATION /etc/default RENAME ggated
  COMPONENT gateway)

# /usr/share/doc/PACKAGE: copyright, changelog, and the pages the units' Documentation= name
foreach(c IN LISTS GPOOL_DEB_COMPONENTS)
  set(p ${GPOOL_DEB_PACKAGE_${c}})
  install(FILES ${GPOOL_DEB_DIR}/copyright DESTINATION share/doc/${p} COMPONENT ${c})
  install(FILES ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz DESTINATION share/doc/${p}
    RENAME changelog.gz COMPONENT ${c})
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/docs/gschedd.md ${CMAKE_SOURCE_DIR}/docs/install.md
  ${CMAKE_SOURCE_DIR}/docs/configuration.md ${CMAKE_SOURCE_DIR}/docs/security.md
  DESTINATION share/doc/gpool-scheduler COMPONENT scheduler)
install(FILES ${CMAKE_SOURCE_DIR}/docs/gworkerd.md ${CMAKE_SOURCE_DIR}/docs/install.md
  ${CMAKE_SOURCE_DIR}/docs/mpi.md DESTINATION share/doc/gpool-worker COMPONENT worker)
install(FILES ${CMAKE_SOURCE_DIR}/docs/commands/ggated.md ${CMAKE_SOURCE_DIR}/docs/services.md
  DESTINATION share/doc/gpool-gateway COMPONENT gateway)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpool)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${GPOOL_DEB_COMPONENTS})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "gpool developers <gpool@example.org>")
set(CPACK_PACKAGE_CONTACT "gpool developers <gpool@example.org>")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.org/gpool")
foreach(c IN LISTS GPOOL_DEB_COMPONENTS)
  string(TOUPPER ${c} C)
  set(CPACK_DEBIAN_${C}_PACKAGE_NAME ${GPOOL_DEB_PACKAGE_${c}})
endforeach()
# Depends: the libraries come from dpkg-shlibdeps; what is named here is what the programs
# need besides (deploy/install-deps.sh --runtime installs the same set on a PC without the
# packages): munged for every credential, adduser for the service accounts, openssl for
# gpool-ca.
set(V ${PROJECT_VERSION})
set(CPACK_DEBIAN_SCHEDULER_PACKAGE_DEPENDS "gpool-client (= ${V}), munge, adduser, openssl")
# sqlite3: a consistent copy of jobs.db for backups (docs/install.md)
set(CPACK_DEBIAN_SCHEDULER_PACKAGE_RECOMMENDS "sqlite3")
set(CPACK_DEBIAN_WORKER_PACKAGE_DEPENDS "gpool-client (= ${V}), munge")
# openmpi-bin: the mpirun of `gsub --mpi=mpirun` jobs; the card modules for jobs on cards;
# crun: the runtime of `gsub --container` jobs; skopeo: registry images (docs/containers.md)
set(CPACK_DEBIAN_WORKER_PACKAGE_SUGGESTS "openmpi-bin, gpool-cuda, gpool-hip, crun, skopeo")
set(CPACK_DEBIAN_CLIENT_PACKAGE_DEPENDS "munge")
# common/sha256.c loads libcrypto at run time for long inputs (staged files), so shlibdeps does
# not see it; without it the commands hash with libsodium, 5x slower
set(CPACK_DEBIAN_CLIENT_PACKAGE_RECOMMENDS "libssl3")
set(CPACK_DEBIAN_GATEWAY_PACKAGE_DEPENDS "gpool-client (= ${V}), munge, adduser")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libgcomm0 (= ${V})")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_LIBGCOMM_PACKAGE_SECTION libs)
# libgcomm.so.0: a shlibs file (CPack writes one for each package with a versioned library:
# libgcomm0 alone) and the ldconfig trigger
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_LIBGCOMM_PACKAGE_CONTROL_EXTRA "${GPOOL_DEB_DIR}/libgcomm/triggers")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# the modules are dlopen()ed by gtrain and gserve (gpool-worker) and by programs built against
# gpool-dev's kernels; the CUDA one needs the NVIDIA driver's libcuda.so.1 (non-free)
set(CPACK_DEBIAN_CUDA_PACKAGE_ENHANCES "gpool-worker")
set(CPACK_DEBIAN_CUDA_PACKAGE_SUGGESTS "libcuda1")
set(CPACK_DEBIAN_HIP_PACKAGE_ENHANCES "gpool-worker")
set(CPACK_COMPONENT_SCHEDULER_DESCRIPTION "gpool scheduler (gschedd)
 The central scheduler of a gpool cluster of spare PCs with graphics cards: queue,
 placement, durable state, REST API, Prometheus metrics and a web dashboard.")
set(CPACK_COMPONENT_WORKER_DESCRIPTION "gpool worker agent (gworkerd, gstepd, gcheck)
 The agent on every PC of a gpool cluster: discovers and screens its cards, runs the
 tasks the scheduler places there and reports on them. Also what jobs run on a node:
 gpool-launch and gpool-rsh (Open MPI's mpirun without ssh), gtrain (data-parallel
 training) and gserve (the reference model server).")
set(CPACK_COMPONENT_CLIENT_DESCRIPTION "gpool commands (gsub, gstat, gcancel, ...)
 Submit and watch jobs on a gpool cluster; the shared /etc/gpool/gpool.conf.")
set(CPACK_COMPONENT_GATEWAY_DESCRIPTION "gpool HTTP gateway (ggated)
 One HTTP address for every service of a gpool cluster, balancing each request over
 the service's healthy replicas.")
set(CPACK_COMPONENT_LIBGCOMM_DESCRIPTION "gpool collective communication library
 libgcomm: allreduce, broadcast and friends among the ranks of a gpool job over TCP,
 UCX or MPI, with host and graphics card buffers.")
set(CPACK_COMPONENT_DEV_DESCRIPTION "gpool development files (libgcomm, kernels)
 Headers, pkg-config files (gpool-comm, gpool-kernels), the kernels' static library
 and the libgcomm.so link, for programs built against libgcomm and the kernels.")
set(CPACK_COMPONENT_CUDA_DESCRIPTION "gpool compute kernels for NVIDIA cards
 The CUDA module of gpool's kernels, loaded by gtrain, gserve and programs built
 against the kernels. Needs the NVIDIA driver (libcuda.so.1).")
set(CPACK_COMPONENT_HIP_DESCRIPTION "gpool compute kernels for AMD cards
 The HIP module of gpool's kernels, loaded by gtrain, gserve and programs built
 against the kernels.")
set(CPACK_DEBIAN_SCHEDULER_PACKAGE_CONTROL_EXTRA
  "${GPOOL_DEB_DIR}/scheduler/postinst;${GPOOL_DEB_DIR}/scheduler/prerm;${GPOOL_DEB_DIR}/scheduler/postrm")
set(CPACK_DEBIAN_WORKER_PACKAGE_CONTROL_EXTRA
  "${GPOOL_DEB_DIR}/worker/postinst;${GPOOL_DEB_DIR}/worker/prerm;${GPOOL_DEB_DIR}/worker/postrm")
set(CPACK_DEBIAN_CLIENT_PACKAGE_CONTROL_EXTRA "${GPOOL_DEB_DIR}/client/conffiles")
set(CPACK_DEBIAN_GATEWAY_PACKAGE_CONTROL_EXTRA
  "${GPOOL_DEB_DIR}/gateway/conffiles;${GPOOL_DEB_DIR}/gateway/postinst;${GPOOL_DEB_DIR}/gateway/prerm;${GPOOL_DEB_DIR}/gateway/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
