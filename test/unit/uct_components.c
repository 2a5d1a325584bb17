/*
 * Lists the UCT components of the libuct in this process and checks whether
 * one is there:
 *   uct_components --expect NAME      exit 0 only if NAME is registered
 *   uct_components --expect-no NAME   exit 0 only if NAME is not registered
 * With --mpi, MPI_Init runs first, so Open MPI's hooks (hook/strata) have had
 * their chance to load modules before the check.
 */
#include <stdio.h>
#include <string.h>
#include <uct/api/uct.h>

#ifdef STRATA_TEST_WITH_MPI
#include <mpi.h>
#endif

static int uct_components_has(const char *name)
{
    uct_component_h *components;
    unsigned num, i;
    int found = 0;

    if (uct_query_components(&components, &num) != UCS_OK) {
        fprintf(stderr, "uct_components: uct_query_components failed\n");
        return -1;
    }
    for (i = 0; i < num; i++) {
        uct_component_attr_t attr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};
        if (uct_component_query(components[i], &attr) != UCS_OK) continue;
        printf("uct_components: component '%s'\n", attr.name);
        found |= !strcmp(attr.name, name);
    }
    uct_release_component_list(components);
    return found;
}

int main(int argc, char **argv)
{
    const char *name = NULL;
    int want = 1, found, i, rank = 0;

    for (i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--expect")) { name = argv[i + 1]; want = 1; }
        else if (!strcmp(argv[i], "--expect-no")) { name = argv[i + 1]; want = 0; }
    }
    if (name == NULL) {
        fprintf(stderr, "usage: %s --expect NAME | --expect-no NAME\n", argv[0]);
        return 2;
    }
#ifdef STRATA_TEST_WITH_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
    found = uct_components_has(name);
    if (found != want) {
        fprintf(stderr, "uct_components: FAIL rank %d: component '%s' expected %s, got %s\n", rank,
                name, want ? "registered" : "absent", found > 0 ? "registered" : "absent");
    } else {
        printf("uct_components: OK rank %d: component '%s' %s\n", rank, name,
               want ? "registered" : "absent");
    }
#ifdef STRATA_TEST_WITH_MPI
    MPI_Finalize();
#endif
    return found == want ? 0 : 1;
}
