// hold_port COMMAND: listens on a free port of 127.0.0.1, then runs
// `sh -c COMMAND` with SKEIN_TEST_HELD_PORT set to that port, so that the
// command finds the port in use. Exits with the command's status.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hold_port COMMAND\n");
    return 2;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 1) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("hold_port");
    return 3;
  }
  setenv("SKEIN_TEST_HELD_PORT", std::to_string(ntohs(addr.sin_port)).c_str(), 1);
  const int status = std::system(argv[1]);  // the socket stays open meanwhile
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
