/**
 * The numbers and names of OVS that mcastctl relies on, in one place: the database it
 * reads, the port OVSDB gives the bridge itself, and the external_ids keys CNI plugins
 * and the daemon write.
 */

export const VSWITCH_DB = 'Open_vSwitch';

/** How OVSDB numbers the bridge's own internal port (OpenFlow 1.3 calls it LOCAL, 0xfffffffe). */
export const OVSDB_LOCAL_OFPORT = 65534;

/** The Interface external_ids a CNI plugin (Antrea, OVN-Kubernetes, ...) writes for a pod's port. */
export const POD_NAME_KEY = 'pod-name';
export const POD_NAMESPACE_KEY = 'pod-namespace';
/** The pod's addresses (Antrea writes them: `10.1.0.2`, or a comma-separated list; a prefix length may follow each). */
export const POD_IP_ADDRESS_KEY = 'ip-address';
/** The MAC of the pod's own end of its link, the source of the frames it sends (Antrea and OVN-Kubernetes write it). */
export const POD_MAC_KEY = 'attached-mac';

/** The bridge's external_ids key that names the daemon holding its lock. */
export const DAEMON_HOLDER_KEY = 'mcastctl-daemon';
