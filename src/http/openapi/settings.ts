// The consumer settings components: the definitions of src/api/settings.ts.
export { SETTINGS_COMPONENTS } from "../../api/settings.js";
