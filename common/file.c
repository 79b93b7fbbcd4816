/* common/file.c — see file.h. */
#include "common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int com_file_read(const char *path, size_t max_bytes, char **data, size_t *len, com_error_t *err) {
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return com_error_set(err, COM_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return com_error_set(err, COM_EIO, "%s: not a readable regular file", path);
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        close(fd);
        return com_error_set(err, COM_ETOOLONG, "%s: %lld bytes, over the limit of %zu", path,
                             (long long)st.st_size, max_bytes);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return com_error_set(err, COM_ENOMEM, "%s: cannot allocate %zu bytes", path, n + 1);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            free(buf);
            close(fd);
            return com_error_set(err, COM_EIO, "%s: short read", path);
        }
        got += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

int com_file_map_open(const char *path, com_file_map_t *map, com_error_t *err) {
    map->data = NULL;
    map->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return com_error_set(err, COM_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return com_error_set(err, COM_EIO, "%s: not a readable regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return 0;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return com_error_set(err, COM_EIO, "%s: mmap: %s", path, strerror(errno));
    map->data = p;
    map->size = (size_t)st.st_size;
    return 0;
}

void com_file_map_close(com_file_map_t *map) {
    if (map && map->data)
        munmap((void *)map->data, map->size);
    if (map) {
        map->data = NULL;
        map->size = 0;
    }
}

int com_path_join(char *out, size_t cap, const char *dir, const char *name, com_error_t *err) {
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    int n = snprintf(out, cap, "%.*s/%s", (int)dl, dir, name);
    if (n < 0 || (size_t)n >= cap)
        return com_error_set(err, COM_ETOOLONG, "path too long: %s/%s", dir, name);
    return 0;
}

int com_path_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}
