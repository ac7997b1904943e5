# Debian packages (`make deb`): CPack's DEB generator, one package per component:
#   gpool-scheduler  gschedd, its dashboard, gschedd.service, the gpool service account
#   gpool-worker     gworkerd, gstepd, gcheck, gworkerd.service, the state and scratch dirs
#   gpool-client     the commands and /etc/gpool/gpool.conf (every key, commented)
# Programs land where deploy/systemd's units run them (/usr/sbin, /usr/bin).
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

install(TARGETS gschedd DESTINATION sbin COMPONENT scheduler)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/scheduler/web/ DESTINATION share/gpool/web
  COMPONENT scheduler)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/gschedd.service
  DESTINATION lib/systemd/system COMPONENT scheduler)
# the pool's own CA for HTTPS on the REST API (docs/commands/gpool-ca.md)
install(PROGRAMS ${CMAKE_SOURCE_DIR}/deploy/gpool-ca DESTINATION sbin COMPONENT scheduler)
install(TARGETS gworkerd gstepd DESTINATION sbin COMPONENT worker)
install(TARGETS gcheck DESTINATION bin COMPONENT worker)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/gworkerd.service
  DESTINATION lib/systemd/system COMPONENT worker)
install(TARGETS gsub gstat gcancel gnodes glogs gpool gacct DESTINATION bin COMPONENT client)
# gpool join-token, join, leave: gpool runs it from its own directory (cli/join/)
install(TARGETS gpool-join DESTINATION bin COMPONENT client)
install(FILES ${CMAKE_BINARY_DIR}/gpool.conf.example DESTINATION /etc/gpool
  RENAME gpool.conf COMPONENT client)
foreach(c scheduler worker client)
  install(FILES ${GPOOL_DEB_DIR}/copyright DESTINATION share/doc/gpool-${c} COMPONENT ${c})
  install(FILES ${CMAKE_BINARY_DIR}/deb/changelog.Debian.gz DESTINATION share/doc/gpool-${c}
    RENAME changelog.gz COMPONENT ${c})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpool)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL scheduler worker client)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "gpool developers <gpool@example.org>")
set(CPACK_PACKAGE_CONTACT "gpool developers <gpool@example.org>")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.org/gpool")
set(CPACK_DEBIAN_SCHEDULER_PACKAGE_NAME gpool-scheduler)
set(CPACK_DEBIAN_WORKER_PACKAGE_NAME gpool-worker)
set(CPACK_DEBIAN_CLIENT_PACKAGE_NAME gpool-client)
set(CPACK_DEBIAN_SCHEDULER_PACKAGE_DEPENDS "gpool-client (= ${PROJECT_VERSION}), munge, adduser, openssl")
set(CPACK_DEBIAN_WORKER_PACKAGE_DEPENDS "gpool-client (= ${PROJECT_VERSION}), munge")
set(CPACK_DEBIAN_CLIENT_PACKAGE_DEPENDS "munge")
# common/sha256.c loads libcrypto at run time for long inputs (staged files), so shlibdeps does
# not see it; without it the commands hash with libsodium, 5x slower
set(CPACK_DEBIAN_CLIENT_PACKAGE_RECOMMENDS "libssl3")
set(CPACK_COMPONENT_SCHEDULER_DESCRIPTION "gpool scheduler (gschedd)
 The central scheduler of a gpool cluster of spare PCs with graphics cards: queue,
 placement, durable state, REST API, Prometheus metrics and a web dashboard.")
set(CPACK_COMPONENT_WORKER_DESCRIPTION "gpool worker agent (gworkerd, gstepd, gcheck)
 The agent on every PC of a gpool cluster: discovers and screens its cards, runs the
 tasks the scheduler places there and reports on them.")
set(CPACK_COMPONENT_CLIENT_DESCRIPTION "gpool commands (gsub, gstat, gcancel, ...)
 Submit and watch jobs on a gpool cluster; the shared /etc/gpool/gpool.conf.")
set(CPACK_DEBIAN_SCHEDULER_PACKAGE_CONTROL_EXTRA
  "${GPOOL_DEB_DIR}/scheduler/postinst;${GPOOL_DEB_DIR}/scheduler/prerm;${GPOOL_DEB_DIR}/scheduler/postrm")
set(CPACK_DEBIAN_WORKER_PACKAGE_CONTROL_EXTRA
  "${GPOOL_DEB_DIR}/worker/postinst;${GPOOL_DEB_DIR}/worker/prerm;${GPOOL_DEB_DIR}/worker/postrm")
set(CPACK_DEBIAN_CLIENT_PACKAGE_CONTROL_EXTRA "${GPOOL_DEB_DIR}/client/conffiles")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
